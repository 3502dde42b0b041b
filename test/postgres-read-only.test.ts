import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { generateApiKey } from '../src/auth/api-key.ts'
import { StoreUnavailableError } from '../src/errors.ts'
import { call } from './helpers/api-client.ts'
import { waitFor } from './helpers/bounded-wait.ts'
import { temporaryDirectory } from './helpers/cleanup.ts'
import { requesterFor, startServeProcess } from './helpers/cli-process.ts'
import { engineSuiteOptions, postgresEngine, postgresSql, postgresStoreAt } from './helpers/store-engines.ts'
import { startTestServer, type TestServer } from './helpers/test-server.ts'

/**
 * Makes the server's database take no writes, or take them again, as a failover onto a standby (or back)
 * does: the setting applies to new sessions, so the database's sessions are ended and the pool reconnects.
 */
async function setReadOnly(server: TestServer | string, on: boolean): Promise<void> {
  const url = new URL(typeof server === 'string' ? server : (server.databaseUrl as string))
  const database = url.pathname.slice(1)
  // From another database: a session on this one could not undo the setting.
  url.pathname = '/postgres'
  const value = on ? 'SET default_transaction_read_only = on' : 'RESET default_transaction_read_only'
  await postgresSql(url.href, `ALTER DATABASE "${database}" ${value}`)
  await postgresSql(
    url.href,
    `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '${database}' AND pid <> pg_backend_pid()`,
  )
}

const createRex = (server: TestServer) =>
  call(server, 'POST', '/v1/pets', { body: { name: 'Rex', categoryId: 1 } })

describe('a PostgreSQL database that takes no writes', engineSuiteOptions(postgresEngine), () => {
  test('when the database turns read-only, then creates are 503 with Retry-After, reads are served, the instance stays ready, and creates work again once it takes writes', async (t) => {
    const server = await startTestServer(t, { engine: postgresEngine })
    const before = await createRex(server)
    assert.equal(before.status, 201)

    await setReadOnly(server, true)
    // The pool's sessions were ended: the first calls may meet a lost connection (503 too), then the
    // reconnected, read-only sessions refuse the writes.
    await waitFor(
      async () => ((await call(server, 'GET', '/v1/pets')).status === 200 ? true : undefined),
      'reads',
    )
    for (let i = 0; i < 3; i++) {
      const refused = await createRex(server)
      assert.equal(refused.status, 503, refused.text)
      assert.equal(refused.json.code, 'service_unavailable')
      assert.equal(refused.headers.get('retry-after'), '1')
    }
    assert.equal((await call(server, 'GET', '/v1/pets')).status, 200, 'reads need no writes')
    // Every instance shares the database: taking them all out of rotation would lose the reads too.
    assert.equal((await call(server, 'GET', '/readyz', { key: false })).status, 200)

    await setReadOnly(server, false)
    await waitFor(async () => ((await createRex(server)).status === 201 ? true : undefined), 'a create')
    assert.equal((await server.store.listPets({ limit: 10 })).length, 2, 'no refused create was stored')
  })

  test('when the database turns read-only, then a create retried with its Idempotency-Key gets its pet again, and a new one 503', async (t) => {
    const server = await startTestServer(t, { engine: postgresEngine })
    const keyed = (key: string, name = 'Rex') =>
      call(server, 'POST', '/v1/pets', { body: { name, categoryId: 1 }, headers: { 'idempotency-key': key } })
    const first = await keyed('order-1')
    assert.equal(first.status, 201, first.text)

    await setReadOnly(server, true)
    await waitFor(
      async () => ((await call(server, 'GET', '/v1/pets')).status === 200 ? true : undefined),
      'reads',
    )
    // A client whose answer was lost retries during the failover: the pet exists, and it is told so.
    const retried = await keyed('order-1')
    assert.equal(retried.status, 201, retried.text)
    assert.equal(retried.text, first.text)
    assert.equal(retried.headers.get('idempotent-replayed'), 'true')
    // The same key for another pet is refused as ever; a new key needs a write.
    assert.equal((await keyed('order-1', 'Other')).json.code, 'idempotency_key_reused')
    const fresh = await keyed('order-2')
    assert.equal(fresh.status, 503, fresh.text)
    assert.equal(fresh.headers.get('retry-after'), '1')
  })

  test('when an instance starts on a read-only database whose schema is current, then its migration writes nothing and succeeds', async (t) => {
    const server = await startTestServer(t, { engine: postgresEngine })
    await setReadOnly(server, true)
    const store = postgresStoreAt(server.databaseUrl as string, 2)
    t.after(() => store.close())
    const report = await store.migrate()
    assert.deepEqual(report.applied, [])
    assert.equal(report.current, report.latest)
    assert.equal((await store.listPets({ limit: 10 })).length, 0, 'it reads')
    await assert.rejects(store.createPet({ pet: { name: 'Rex', categoryId: 1n } }), StoreUnavailableError)
  })

  test('when an instance restarts with API_KEYS on a read-only database that holds those keys, then it starts and serves reads with them', async (t) => {
    const server = await startTestServer(t, { engine: postgresEngine })
    const url = server.databaseUrl as string
    const key = generateApiKey()
    const env = { DATABASE_URL: url, API_KEYS: `failover:${key}` }
    const first = await startServeProcess(env, temporaryDirectory(t))
    first.child.kill('SIGTERM')
    assert.equal(await first.exited, 0)

    // A failover onto a standby: every instance restarted then finds its keys already stored.
    await setReadOnly(url, true)
    const restarted = await startServeProcess(env, temporaryDirectory(t))
    t.after(() => restarted.child.kill('SIGKILL'))
    const listed = await requesterFor(key)(restarted, '/v1/pets')
    assert.equal(listed.status, 200, await listed.text())
  })
})
