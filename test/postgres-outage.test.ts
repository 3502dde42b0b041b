import assert from 'node:assert/strict'
import { type AddressInfo, createServer } from 'node:net'
import { describe, type TestContext, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { generateApiKey } from '../src/auth/api-key.ts'
import { StoreUnavailableError, WriteInDoubtError } from '../src/errors.ts'
import { CLOSE_GRACE_MS } from '../src/store/postgres/postgres-connection.ts'
import { PostgresStore } from '../src/store/postgres/postgres-store.ts'
import { waitUntil } from './helpers/bounded-wait.ts'
import { temporaryDirectory } from './helpers/cleanup.ts'
import { startServeProcess } from './helpers/cli-process.ts'
import { checkedFetch } from './helpers/conformance-fetch.ts'
import { petsInDatabase } from './helpers/outage-load.ts'
import { startThrowawayPostgres, throwawayPostgresSuiteOptions } from './helpers/postgres-server.ts'
import { connectionsTo } from './helpers/process-sockets.ts'

const CONNECT_TIMEOUT_MS = 1000

/**
 * A migrated store on a throwaway server of the test's own (to freeze), both closed after the test; with
 * the server's port, to watch the store's connections to it.
 */
async function storeOnOwnServer(
  t: TestContext,
  settings: { poolSize: number; statementTimeoutMs: number; connectTimeoutMs: number },
) {
  const postgres = await startThrowawayPostgres()
  t.after(() => postgres.stop('immediate'))
  t.after(() => postgres.thaw())
  const url = await postgres.createDatabase()
  const store = new PostgresStore({ url, ...settings, onIdleError: () => {} })
  t.after(() => store.close())
  await store.migrate()
  return { postgres, store, port: Number(new URL(url).port) }
}

// Under CI this suite must run: a server named by URL cannot be stopped, so it always starts its own.
describe('PostgreSQL outages', throwawayPostgresSuiteOptions(), () => {
  test('when the database stops under load, then requests fail fast with 503, the service recovers by itself and no acknowledged create is lost', async (t) => {
    // A server of its own: this test stops it.
    const postgres = await startThrowawayPostgres()
    t.after(() => postgres.stop('immediate'))
    const key = generateApiKey()
    const databaseUrl = await postgres.createDatabase()
    const env = {
      DATABASE_URL: databaseUrl,
      API_KEYS: `outage:${key}`,
      PG_CONNECT_TIMEOUT_MS: String(CONNECT_TIMEOUT_MS),
      PG_STATEMENT_TIMEOUT_MS: '2000',
      // No cached key lookups and no cached answers: during the outage every request needs the database.
      API_KEY_CACHE_TTL_MS: '0',
      READ_CACHE_BYTES: '0',
    }
    const service = await startServeProcess(env, temporaryDirectory(t))
    t.after(() => service.child.kill('SIGKILL'))
    let exited = false
    service.exited.then(() => {
      exited = true
    })
    const call = async (method: string, path: string, body?: string, bearer = key) => {
      const started = performance.now()
      const response = await checkedFetch(service.origin, path, {
        method,
        headers: {
          authorization: `Bearer ${bearer}`,
          ...(body ? { 'content-type': 'application/json' } : {}),
        },
        body,
        signal: AbortSignal.timeout(10_000),
      })
      const text = await response.text()
      return {
        status: response.status,
        text,
        retryAfter: response.headers.get('retry-after'),
        ms: performance.now() - started,
      }
    }
    assert.equal((await call('GET', '/readyz')).status, 200, 'ready before the outage')

    // Writers run through the whole outage; every 201 they get must survive it.
    const acknowledged: string[] = []
    let writing = true
    let sequence = 0
    const writers = Array.from({ length: 4 }, async () => {
      while (writing) {
        const response = await call('POST', '/v1/pets', `{"name":"w${sequence++}","categoryId":1}`)
        if (response.status === 201) acknowledged.push(response.text)
        else assert.equal(response.status, 503, response.text)
      }
    })
    // Stopped even when an assertion fails first, or the writers would run on forever; each call ends
    // within its 10 s timeout. Their own failures are reported where the test awaits them below.
    t.after(async () => {
      writing = false
      await Promise.allSettled(writers)
    })
    await sleep(300)
    postgres.stop('immediate')

    for (const [method, path, body, bearer] of [
      ['GET', '/v1/pets'],
      ['GET', '/v1/pets/1'],
      ['POST', '/v1/pets', '{"name":"x","categoryId":1}'],
      // A key the database has never seen: unknown is not the same as refused while it cannot be asked.
      ['GET', '/v1/pets', undefined, generateApiKey()],
      ['GET', '/readyz'],
    ] as const) {
      const response = await call(method, path, body, bearer)
      assert.equal(response.status, 503, `${method} ${path} during the outage: ${response.text}`)
      assert.deepEqual(Object.keys(JSON.parse(response.text)).sort(), ['code', 'message', 'status'])
      assert.equal(JSON.parse(response.text).code, 'service_unavailable')
      assert.equal(response.retryAfter, '1', `${method} ${path}: a reconnect is a second away`)
      // Readiness says which condition, not the driver's words ("refused"), to whoever asks.
      if (path === '/readyz')
        assert.equal(JSON.parse(response.text).message, 'not ready: the store cannot be reached')
      assert.ok(response.ms < CONNECT_TIMEOUT_MS + 1500, `answered in ${Math.round(response.ms)} ms`)
    }
    await sleep(500)
    assert.equal(exited, false, 'the service survives connections dropped by the database')

    postgres.start()
    let recovered = false
    for (let attempt = 0; attempt < 40 && !recovered; attempt++) {
      recovered = (await call('GET', '/v1/pets')).status === 200
      if (!recovered) await sleep(250)
    }
    assert.ok(recovered, 'the service recovers by itself once the database is back')
    assert.equal((await call('GET', '/readyz')).status, 200, 'ready again after the outage')
    writing = false
    await Promise.all(writers)

    assert.ok(acknowledged.length > 0)
    const created = acknowledged.map((text) => {
      const pet = JSON.parse(text) as { id: number; name: string; categoryId: number }
      return { ...pet, id: /"id":(\d+)/.exec(text)?.[1] ?? '' }
    })
    const stored = await petsInDatabase(
      databaseUrl,
      created.map((pet) => pet.id),
    )
    for (const pet of created) {
      assert.deepEqual(
        stored.get(pet.id),
        { id: pet.id, name: pet.name, category_id: String(pet.categoryId) },
        `acknowledged create ${pet.id} is in the database after the outage`,
      )
    }
    t.diagnostic(`acknowledged ${acknowledged.length} creates across the outage`)
  })

  test('when the database host accepts connections but never answers, then calls fail within the connect timeout', async (t) => {
    const silent = createServer(() => {})
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
    t.after(() => silent.close())
    const { port } = silent.address() as AddressInfo
    const store = new PostgresStore({
      url: `postgres://nobody@127.0.0.1:${port}/none`,
      poolSize: 2,
      statementTimeoutMs: 1000,
      connectTimeoutMs: CONNECT_TIMEOUT_MS,
      onIdleError: () => {},
    })
    t.after(() => store.close())
    for (const attempt of [
      () => store.getPet(1n),
      () => store.createPet({ pet: { name: 'x', categoryId: 1n } }),
    ]) {
      const started = performance.now()
      await assert.rejects(attempt(), StoreUnavailableError)
      assert.ok(performance.now() - started < CONNECT_TIMEOUT_MS + 500)
    }
  })

  test('when the database is frozen with creates and reads in flight, then closing the store takes at most its grace and those calls fail as unavailable, the creates sent as in doubt', async (t) => {
    const { postgres, store } = await storeOnOwnServer(t, {
      poolSize: 4,
      statementTimeoutMs: 5000,
      connectTimeoutMs: CONNECT_TIMEOUT_MS,
    })
    await Promise.all([store.createPet({ pet: { name: 'before', categoryId: 1n } }), store.getPet(1n)])
    postgres.freeze()
    const settled = (call: Promise<unknown>) =>
      call.then(
        () => 'answered',
        (error: unknown) => error,
      )
    // The creates' batch is sent on a connection left open; the reads, later, wait for new ones.
    const creates = [
      store.createPet({ pet: { name: 'a', categoryId: 1n } }),
      store.createPet({ pet: { name: 'b', categoryId: 1n } }),
    ].map(settled)
    await sleep(100)
    const inFlight = [...creates, ...[store.getPet(1n), store.listPets({ limit: 5 })].map(settled)]
    await sleep(300)

    const started = performance.now()
    await store.close()
    const closedMs = performance.now() - started
    assert.ok(closedMs < CLOSE_GRACE_MS + 1000, `closed in ${Math.round(closedMs)} ms`)
    const outcomes = await Promise.all(inFlight)
    for (const outcome of outcomes) assert.ok(outcome instanceof StoreUnavailableError, `${outcome}`)
    // The creates' statement was sent to the frozen server, which may commit it when it resumes; the
    // reads waited for a connection.
    assert.deepEqual(
      outcomes.map((outcome) => outcome instanceof WriteInDoubtError),
      [true, true, false, false],
      'the creates in doubt, the reads not',
    )
    assert.ok(
      performance.now() - started < CLOSE_GRACE_MS + 1000,
      'the calls in flight failed with the close',
    )
    await assert.rejects(store.getPet(1n), StoreUnavailableError)
    await assert.rejects(store.createPet({ pet: { name: 'c', categoryId: 1n } }), StoreUnavailableError)
  })

  for (const [what, call] of [
    ['a read', (store: PostgresStore) => store.getPet(1n)],
    // In a transaction, which is never rolled back then: the ROLLBACK would queue behind the hung BEGIN.
    ['a create', (store: PostgresStore) => store.createPet({ pet: { name: 'x', categoryId: 1n } })],
  ] as const) {
    test(`when ${what} times out on a frozen database, then its connection is destroyed at once, not ended with a goodbye the server never answers`, async (t) => {
      // The client gives up 1 s past the statement timeout: at 4 s, and at 8 s after a ROLLBACK that
      // waits as long (the call's deadline, past a 5 s connect timeout, would come later still).
      const statementTimeoutMs = 3000
      const { postgres, store, port } = await storeOnOwnServer(t, {
        poolSize: 1,
        statementTimeoutMs,
        connectTimeoutMs: 5000,
      })
      assert.equal(connectionsTo(port), 1, 'the pool holds its one connection')
      postgres.freeze()
      const failed = assert.rejects(call(store), StoreUnavailableError)
      // Ended politely, the socket would stay open (half-closed) for as long as the server stays frozen.
      // 2 s past the client's bound tells all three apart, with room for a busy machine.
      await waitUntil(
        () => connectionsTo(port) === 0,
        () => `connections to the frozen server still open: ${connectionsTo(port)}`,
        { timeoutMs: statementTimeoutMs + 1000 + 2000 },
      )
      await failed
    })
  }

  test('when the database is frozen and the store closes after a write still waiting for a connection, then that write fails as unavailable at the close grace, not at the connect timeout', async (t) => {
    // A connect timeout far past the close grace, so the two cannot be mistaken.
    const { postgres, store } = await storeOnOwnServer(t, {
      poolSize: 1,
      statementTimeoutMs: 5000,
      connectTimeoutMs: 5000,
    })
    postgres.freeze()
    // The one connection hangs with a read; the write (the app's last, as it closes) waits for it.
    const read = store.getPet(1n).catch((error: unknown) => error)
    const started = performance.now()
    const write = store.recordDeprecatedCalls([{ apiKeyId: 1n, calls: 1, lastCallAtMs: Date.now() }])
    const written = write.then(
      () => 'written',
      (error: unknown) => error,
    )
    await store.close(written)
    // Far under the 5 s connect timeout the write would wait out otherwise, with room for a busy machine.
    const boundMs = 3000
    const closedMs = performance.now() - started
    assert.ok(closedMs < boundMs, `closed in ${Math.round(closedMs)} ms`)
    const outcome = await written
    assert.ok(outcome instanceof StoreUnavailableError, `${outcome}`)
    assert.ok(performance.now() - started < boundMs, 'the write failed with the close')
    assert.ok((await read) instanceof StoreUnavailableError)
  })
})
