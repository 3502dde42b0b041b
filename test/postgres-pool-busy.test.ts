import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import pg from 'pg'
import { StoreUnavailableError } from '../src/errors.ts'
import { call } from './helpers/api-client.ts'
import { waitFor } from './helpers/bounded-wait.ts'
import { sharedPostgres } from './helpers/postgres-server.ts'
import { engineSuiteOptions, postgresEngine, postgresStoreAt } from './helpers/store-engines.ts'
import { startTestServer } from './helpers/test-server.ts'

describe(
  'a PostgreSQL pool whose every connection waits on a lock',
  engineSuiteOptions(postgresEngine),
  () => {
    test('when every connection waits behind a lock, then the instance stays ready, a call that finds no connection says the pool is busy, and the waiting reads are served once the lock goes', async (t) => {
      const url = await (await sharedPostgres()).createDatabase()
      // Two connections (the store's connect timeout is 2 s): two reads behind the lock take them both.
      const store = postgresStoreAt(url, 2)
      const server = await startTestServer(t, { store, env: { READ_CACHE_BYTES: '0' } })
      assert.equal(
        (await call(server, 'POST', '/v1/pets', { body: { name: 'Rex', categoryId: 1 } })).status,
        201,
      )
      assert.equal((await call(server, 'GET', '/readyz', { key: false })).status, 200)

      // An operator's (or a migration's) lock on the table every read needs.
      const locker = new pg.Client({ connectionString: url })
      await locker.connect()
      t.after(() => locker.end())
      await locker.query('BEGIN; LOCK TABLE pets IN ACCESS EXCLUSIVE MODE')
      const waiting = [call(server, 'GET', '/v1/pets/1'), call(server, 'GET', '/v1/pets')]
      await waitFor(async () => {
        const { total, idle } = store.poolStats()
        return total === 2 && idle === 0 ? true : undefined
      }, 'both connections waiting on the lock')

      // The lock is the database's, and every instance meets it: all of them out of rotation at once would
      // refuse what needs no table (and what the cache holds) as well.
      const started = performance.now()
      const ready = await call(server, 'GET', '/readyz', { key: false })
      assert.equal(ready.status, 200, ready.text)
      assert.ok(performance.now() - started < 1000, 'answered without waiting for a connection')

      await assert.rejects(store.getPet(1n), (error: unknown) => {
        assert.ok(error instanceof StoreUnavailableError)
        assert.match(error.message, /every connection .* is busy/)
        return true
      })

      await locker.query('ROLLBACK')
      for (const response of await Promise.all(waiting)) assert.equal(response.status, 200, response.text)
      assert.equal((await call(server, 'GET', '/readyz', { key: false })).status, 200)
    })
  },
)
