import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import pg from 'pg'
import { READ_ONLY_REASON } from '../src/store/postgres/postgres-health.ts'
import { PostgresStore } from '../src/store/postgres/postgres-store.ts'
import { call } from './helpers/api-client.ts'
import { waitFor } from './helpers/bounded-wait.ts'
import { engineSuiteOptions, postgresEngine } from './helpers/store-engines.ts'
import { startTestServer, type TestServer } from './helpers/test-server.ts'

/**
 * Makes the server's database take no writes, or take them again, as a failover onto a standby (or back)
 * does: the setting applies to new sessions, so the database's sessions are ended and the pool reconnects.
 */
async function setReadOnly(server: TestServer, on: boolean): Promise<void> {
  const url = new URL(server.databaseUrl as string)
  const database = url.pathname.slice(1)
  // From another database: a session on this one could not undo the setting.
  url.pathname = '/postgres'
  const admin = new pg.Client({ connectionString: url.href })
  await admin.connect()
  try {
    const value = on ? 'SET default_transaction_read_only = on' : 'RESET default_transaction_read_only'
    await admin.query(`ALTER DATABASE "${database}" ${value}`)
    await admin.query(
      'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
      [database],
    )
  } finally {
    await admin.end()
  }
}

const createRex = (server: TestServer) =>
  call(server, 'POST', '/v1/pets', { body: { name: 'Rex', categoryId: 1 } })

describe('a PostgreSQL database that takes no writes', engineSuiteOptions(postgresEngine), () => {
  test('when the database turns read-only, then /readyz says so, creates are 503 with Retry-After, reads are served, and all recover when it takes writes again', async (t) => {
    const server = await startTestServer(t, { engine: postgresEngine })
    const before = await createRex(server)
    assert.equal(before.status, 201)

    await setReadOnly(server, true)
    const notReady = await waitFor(async () => {
      const probe = await call(server, 'GET', '/readyz', { key: false })
      return probe.status === 503 && /read-only/.test(probe.json.message) ? probe : undefined
    }, '/readyz never said the database is read-only')
    assert.equal(notReady.headers.get('retry-after'), '1')
    for (let i = 0; i < 3; i++) {
      const refused = await createRex(server)
      assert.equal(refused.status, 503, refused.text)
      assert.equal(refused.json.code, 'service_unavailable')
      assert.equal(refused.headers.get('retry-after'), '1')
    }
    assert.equal((await call(server, 'GET', '/v1/pets')).status, 200, 'reads need no writes')

    await setReadOnly(server, false)
    await waitFor(async () => {
      const probe = await call(server, 'GET', '/readyz', { key: false })
      return probe.status === 200 ? probe : undefined
    }, '/readyz never came back once the database took writes')
    assert.equal((await createRex(server)).status, 201)
    assert.equal((await server.store.listPets({ limit: 10 })).length, 2, 'no refused create was stored')
  })

  test('when an instance starts on a read-only database whose schema is current, then its migration writes nothing and succeeds', async (t) => {
    const server = await startTestServer(t, { engine: postgresEngine })
    await setReadOnly(server, true)
    const store = new PostgresStore({
      url: server.databaseUrl as string,
      poolSize: 2,
      statementTimeoutMs: 5000,
      connectTimeoutMs: 2000,
      onIdleError: () => {},
    })
    t.after(() => store.close())
    const report = await store.migrate()
    assert.deepEqual(report.applied, [])
    assert.equal(report.current, report.latest)
    assert.deepEqual(await store.health(), { writable: false, reason: READ_ONLY_REASON })
  })
})
