import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { setImmediate, setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import { StoreUnavailableError } from '../src/errors.ts'
import { createMetrics, type Metrics } from '../src/metrics/metrics.ts'
import { PostgresStore } from '../src/store/postgres/postgres-store.ts'
import { call } from './helpers/api-client.ts'
import { waitFor } from './helpers/bounded-wait.ts'
import {
  sharedPostgres,
  startThrowawayPostgres,
  throwawayPostgresSuiteOptions,
} from './helpers/postgres-server.ts'
import { engineSuiteOptions, postgresEngine, postgresSql, postgresStoreAt } from './helpers/store-engines.ts'
import { startTestServer } from './helpers/test-server.ts'

/** The pool's gauges as /metrics serves them: connections by state, then the calls waiting for one. */
async function poolGauges(metrics: Metrics): Promise<string> {
  const text = await metrics.registry.metrics()
  const gauges = text.matchAll(/^petstore_store_(?:connections\{state="(\w+)"\}|(waiting)_calls) (\d+)$/gm)
  return [...gauges].map(([, state, waiting, value]) => `${state ?? waiting} ${value}`).join(', ')
}

/** Callers that keep every connection busy, as steady traffic does; stopped before anything is closed. */
function keepBusy(store: PostgresStore): { stop(): Promise<void> } {
  let calling = true
  const callers = Array.from({ length: 4 }, async () => {
    while (calling) {
      await store.getPet(1n).catch(() => undefined)
      await setImmediate()
    }
  })
  return {
    async stop() {
      calling = false
      await Promise.all(callers)
    },
  }
}

describe(
  'a PostgreSQL pool whose every connection waits on a lock',
  engineSuiteOptions(postgresEngine),
  () => {
    test('when every connection waits behind a lock, then the instance stays ready, the gauges show both connections busy and a third call waiting, that call says the pool is busy, and the waiting reads are served once the lock goes', async (t) => {
      const url = await (await sharedPostgres()).createDatabase()
      // Two connections (the store's connect timeout is 2 s): two reads behind the lock take them both.
      const store = postgresStoreAt(url, 2)
      const metrics = createMetrics(store.poolStats.bind(store))
      const server = await startTestServer(t, { store, env: { READ_CACHE_BYTES: '0' }, app: { metrics } })
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

      const refused = assert.rejects(store.getPet(1n), (error: unknown) => {
        assert.ok(error instanceof StoreUnavailableError)
        assert.match(error.message, /every connection .* is busy/)
        return true
      })
      await waitFor(
        () => (store.poolStats().waiting === 1 ? true : undefined),
        'a third call waiting for a connection',
      )
      assert.equal(await poolGauges(metrics), 'busy 2, idle 0, waiting 1')
      await refused

      await locker.query('ROLLBACK')
      for (const response of await Promise.all(waiting)) assert.equal(response.status, 200, response.text)
      assert.equal((await call(server, 'GET', '/readyz', { key: false })).status, 200)
      assert.equal(await poolGauges(metrics), 'busy 0, idle 2, waiting 0')
    })
  },
)

describe('a PostgreSQL that refuses new connections', engineSuiteOptions(postgresEngine), () => {
  test("when the database refuses the service's connections under load (connections disallowed, its sessions ended), then readiness fails within 2 s, not after a call bound of refusals read as answers, and is back once it takes them", async (t) => {
    const url = await (await sharedPostgres()).createDatabase()
    const database = new URL(url).pathname.slice(1)
    const admin = Object.assign(new URL(url), { pathname: '/postgres' }).href
    const store = postgresStoreAt(url, 2)
    const server = await startTestServer(t, { store, env: { READ_CACHE_BYTES: '0' } })
    assert.equal((await call(server, 'GET', '/readyz', { key: false })).status, 200)
    const callers = keepBusy(store)
    try {
      // A database closed to new sessions (a maintenance, max_connections reached, a password rotated).
      await postgresSql(admin, `ALTER DATABASE "${database}" ALLOW_CONNECTIONS false`)
      // A session still starting as connections were disallowed outlives one pass and serves on (ready,
      // rightly): ended until a pass finds none, and the 2 s counted from there.
      await waitFor(
        async () => {
          const ended = await postgresSql(
            admin,
            `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '${database}'`,
          )
          return ended.length === 0 ? true : undefined
        },
        'sessions of the database left',
        { timeoutMs: 10_000, everyMs: 20 },
      )
      const refused = performance.now()
      const ready = async () => (await call(server, 'GET', '/readyz', { key: false })).status === 200
      while (await ready()) {
        assert.ok(performance.now() - refused < 2000, 'readiness failed within 2 s of the refusals')
        await sleep(100)
      }
      await postgresSql(admin, `ALTER DATABASE "${database}" ALLOW_CONNECTIONS true`)
      await waitFor(async () => ((await ready()) ? true : undefined), 'ready again')
    } finally {
      await callers.stop()
      await postgresSql(admin, `ALTER DATABASE "${database}" ALLOW_CONNECTIONS true`)
    }
  })
})

// A server of its own: this test freezes it.
describe('a hung PostgreSQL with every connection busy', throwawayPostgresSuiteOptions(), () => {
  test('when the server hangs with every connection busy, then readiness fails once no answer has come for one call bound, and is back after', async (t) => {
    const postgres = await startThrowawayPostgres()
    t.after(() => postgres.stop('immediate'))
    t.after(() => postgres.thaw())
    const url = await postgres.createDatabase()
    // One call bound: 1 s to connect, 1 s of statement and 1 s more.
    const store = new PostgresStore({
      url,
      poolSize: 2,
      statementTimeoutMs: 1000,
      connectTimeoutMs: 1000,
      onIdleError: () => {},
    })
    const server = await startTestServer(t, { store, env: { READ_CACHE_BYTES: '0' } })
    assert.equal((await call(server, 'GET', '/readyz', { key: false })).status, 200)

    const callers = keepBusy(store)
    try {
      postgres.freeze()
      const frozen = performance.now()
      const ready = async () => (await call(server, 'GET', '/readyz', { key: false })).status === 200
      while (await ready()) {
        assert.ok(performance.now() - frozen < 15_000, 'readiness failed within 15 s of the hang')
        await sleep(250)
      }
      postgres.thaw()
      await waitFor(async () => ((await ready()) ? true : undefined), 'ready again')
    } finally {
      postgres.thaw()
      await callers.stop()
    }
  })
})
