import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { StoreUnavailableError } from '../src/errors.ts'
import { CLOSE_GRACE_MS, PostgresPool } from '../src/store/postgres/postgres-connection.ts'
import { PostgresLoad } from '../src/store/postgres/postgres-load.ts'
import { CopyConflictError } from '../src/store/shared/copy-errors.ts'
import type { CopiedPet } from '../src/store/shared/store-copy.ts'
import { call } from './helpers/api-client.ts'
import { waitUntil } from './helpers/bounded-wait.ts'
import { adminOn, emptyDatabase, storeOptions, untilRows } from './helpers/postgres-store-fixtures.ts'
import { engineSuiteOptions, postgresEngine, postgresSql, postgresStoreAt } from './helpers/store-engines.ts'
import { startTcpProxy, type TcpProxy } from './helpers/tcp-proxy.ts'
import { startTestServer } from './helpers/test-server.ts'

const pet = (id: bigint, name: string): CopiedPet => ({
  id,
  name,
  category_id: 1n,
  status: null,
  created_at: '2026-01-01T00:00:00.000Z',
})

describe('PostgreSQL connections', engineSuiteOptions(postgresEngine), () => {
  test('when the code inside a transaction throws (a copy conflict), then the transaction is rolled back and its connection kept, not cut mid-transaction', async (t) => {
    const url = await emptyDatabase()
    const load = new PostgresLoad(storeOptions(url, { poolSize: 1 }))
    t.after(() => load.close())
    const admin = await adminOn(t, url)
    // The pool's connections as the server sees them: which backend, and whether a transaction is open.
    const backends = async () =>
      (
        await admin.query<{ pid: number; state: string }>(
          `SELECT pid, state FROM pg_stat_activity
           WHERE datname = current_database() AND application_name = 'petstore' ORDER BY pid`,
        )
      ).rows
    await load.prepare()
    assert.equal(await load.writePets([pet(1n, 'Rex')]), 1)
    const [connection] = await backends()
    assert.ok(connection, 'the pool holds its one connection')

    // Pet 1 copied again with other content: the check inside the transaction throws after its insert.
    await assert.rejects(load.writePets([pet(2n, 'Fido'), pet(1n, 'Other')]), CopyConflictError)
    assert.deepEqual(
      await backends(),
      [{ pid: connection.pid, state: 'idle' }],
      'the same backend, idle: rolled back, and neither cut nor left in its transaction',
    )
    assert.equal(await load.writePets([pet(2n, 'Fido')]), 1, 'pet 2 was rolled back with the conflict')
    assert.deepEqual(await backends(), [{ pid: connection.pid, state: 'idle' }], 'the next chunk reused it')
  })

  test('when the server ends a connection and says so in the same read as an answer that hands it to a call waiting for it, then that call fails or is served, the process goes on, and so does the pool', async (t) => {
    const url = await emptyDatabase()
    const proxy = await startTcpProxy(t, url, { batchMs: 1000 })
    const pool = new PostgresPool(storeOptions(proxy.url, { poolSize: 1 }))
    t.after(() => pool.close())
    const admin = await adminOn(t, url)
    const [backend] = await pool.query<{ pid: number }>({
      name: 'pid',
      text: 'SELECT pg_backend_pid() AS pid',
    })
    // A lone statement the pool runs itself, and a call waiting behind it for the one connection.
    const first = pool.query({ name: 'nap', text: 'SELECT pg_sleep(0.1)' })
    const waiting = pool.query({ name: 'one', text: 'SELECT 1 AS one' }, { since: performance.now() })
    // Ended after the nap is answered, before the proxy passes that answer on: the two come in one read.
    // The pid's answer was just passed, so the next batch is a second away: 0.1 s to the nap's answer,
    // 0.4 s to the end, 0.5 s to spare on a busy machine.
    await sleep(400)
    await admin.query('SELECT pg_terminate_backend($1)', [backend?.pid])
    for (const settled of await Promise.allSettled([first, waiting])) {
      if (settled.status === 'rejected')
        assert.ok(settled.reason instanceof StoreUnavailableError, settled.reason)
    }
    assert.deepEqual(await pool.query({ name: 'one', text: 'SELECT 1 AS one' }), [{ one: 1 }])
  })

  test('when the server has no slot left for a new connection but the pool holds some, then calls wait for those, with and without a deadline, rather than fail', async (t) => {
    const url = await emptyDatabase()
    // A role's CONNECTION LIMIT refuses as a full server does (53300, too_many_connections).
    const role = `limited_${process.pid}_${Date.now()}`
    await postgresSql(url, `CREATE ROLE ${role} LOGIN CONNECTION LIMIT 2`)
    const pools: PostgresPool[] = []
    t.after(async () => {
      await Promise.all(pools.map((each) => each.close()))
      await postgresSql(url, `DROP ROLE IF EXISTS ${role}`)
    })
    const limited = new URL(url)
    limited.username = role
    const pool = new PostgresPool(storeOptions(limited.href, { poolSize: 10 }))
    pools.push(pool)
    const nap = { name: 'nap', text: 'SELECT pg_sleep(0.05)' }
    // A serving pool: its two connections open (a cold one, with none, fails a refused call at once).
    await Promise.all([pool.query(nap), pool.query(nap)])
    assert.equal(pool.stats().total, 2)
    const calls = Array.from({ length: 24 }, (_, i) =>
      i % 2 === 0 ? pool.query(nap) : pool.query(nap, { since: performance.now() }),
    )
    const settled = await Promise.allSettled(calls)
    const failed = settled.flatMap((result) => (result.status === 'rejected' ? [String(result.reason)] : []))
    assert.deepEqual(failed, [], 'every call waited for one of the two connections')
    assert.ok(pool.stats().total <= 2, `${pool.stats().total} connections`)

    // Slots freed: a second later the pool grows again.
    await postgresSql(url, `ALTER ROLE ${role} CONNECTION LIMIT 4`)
    await sleep(1100)
    await Promise.all(Array.from({ length: 8 }, () => pool.query(nap)))
    assert.ok(pool.stats().total > 2, `still ${pool.stats().total} connections`)

    // No slot at all, and no connection of its own: a call fails as unavailable at once, it does not wait
    // out the connect timeout.
    await postgresSql(url, `ALTER ROLE ${role} CONNECTION LIMIT 0`)
    const empty = new PostgresPool(storeOptions(limited.href, { poolSize: 10, connectTimeoutMs: 20_000 }))
    pools.push(empty)
    const started = performance.now()
    await assert.rejects(empty.query(nap), StoreUnavailableError)
    assert.ok(performance.now() - started < 10_000, 'it waited for the connect timeout')
  })

  test('when calls wait while the pool is held and the server has room again, then they are served once the hold ends, not left to their connect timeout', async (t) => {
    const url = await emptyDatabase()
    const role = `held_${process.pid}_${Date.now()}`
    await postgresSql(url, `CREATE ROLE ${role} LOGIN CONNECTION LIMIT 2`)
    const limited = new URL(url)
    limited.username = role
    const pool = new PostgresPool(storeOptions(limited.href, { poolSize: 10, connectTimeoutMs: 3000 }))
    t.after(async () => {
      await pool.close()
      await postgresSql(url, `DROP ROLE IF EXISTS ${role}`)
    })
    // Both connections the role may have, busy past the queued calls' connect timeout.
    const busy = [1, 2].map(() => pool.query({ name: 'busy', text: 'SELECT pg_sleep(4)' }))
    // Running on the server, not only opening (the pool counts those too).
    const sleeping = `SELECT count(*)::int AS n FROM pg_stat_activity WHERE usename = '${role}' AND query LIKE '%pg_sleep%'`
    await waitUntil(async () => (await postgresSql(url, sleeping))[0]?.n === 2, 'two busy connections')
    const nap = { name: 'nap', text: 'SELECT 1' }
    const waiting = (count: number) =>
      waitUntil(
        () => pool.stats().waiting === count,
        () => `waiting: ${JSON.stringify(pool.stats())}`,
      )
    // The first is refused a connection, which holds the pool; those after it wait at once.
    const queued = [pool.query(nap)]
    await waiting(1)
    queued.push(pool.query(nap), pool.query(nap), pool.query(nap))
    await waiting(4)
    await postgresSql(url, `ALTER ROLE ${role} CONNECTION LIMIT 10`)
    const settled = await Promise.allSettled(queued)
    assert.deepEqual(
      settled.flatMap((result) => (result.status === 'rejected' ? [String(result.reason)] : [])),
      [],
    )
    await Promise.all(busy)
  })

  test('when a read is ended by the server while it runs (an operator terminating it), then it is not sent again', async (t) => {
    const url = await emptyDatabase()
    const admin = await adminOn(t, url)
    await admin.query('CREATE SEQUENCE runs')
    const pool = new PostgresPool(storeOptions(url, { poolSize: 2 }))
    t.after(() => pool.close())
    // Settled at once, so its failure is never a rejection nobody has taken yet.
    const read = pool
      .query({ name: 'test.runs', text: "SELECT nextval('runs'), pg_sleep(2)" }, { reads: true })
      .then(
        () => 'ran to its end',
        (error: unknown) => error,
      )
    // Well into its run: a read ended at once is one that met a connection ended while idle.
    await sleep(1000)
    await untilRows(
      admin,
      "SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity WHERE query LIKE '%pg_sleep(2)' AND pid <> pg_backend_pid()",
      'the read never ran',
    )
    assert.ok((await read) instanceof StoreUnavailableError, String(await read))
    const { rows } = await admin.query('SELECT last_value FROM runs')
    assert.equal(String(rows[0]?.last_value), '1', 'it ran once')
  })

  // Each way a pooled connection is ended while it sits idle: what the test sets first, and the end itself.
  // The server's own ends are held in the proxy (its error, then its close), as in a socket not read yet.
  const idleEnds: Record<
    string,
    { before?: (url: string) => Promise<unknown>; end: (proxy: TcpProxy, url: string) => Promise<unknown> }
  > = {
    'a proxy (or the server) closing it': { end: async (proxy) => proxy.resetAtNextUse() },
    'its idle_session_timeout (57P05)': {
      before: (url) =>
        postgresSql(
          url,
          `ALTER DATABASE "${new URL(url).pathname.slice(1)}" SET idle_session_timeout = 1000`,
        ),
      end: (proxy) => {
        proxy.holdUntilNextUse()
        return sleep(1500)
      },
    },
    'an operator terminating it (57P01)': {
      end: (proxy, url) => {
        proxy.holdUntilNextUse()
        return postgresSql(
          url,
          `SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity
           WHERE application_name = 'petstore' AND datname = current_database()`,
        )
      },
    },
  }
  for (const [how, { before, end }] of Object.entries(idleEnds)) {
    test(`when the pool's idle connection was ended by ${how} and the instance has not seen it yet, then reads are served on a new connection, not answered 503`, async (t) => {
      const url = await emptyDatabase()
      await before?.(url)
      const proxy = await startTcpProxy(t, url)
      const server = await startTestServer(t, { store: postgresStoreAt(proxy.url, 1) })
      // The pool's connection made and idle, the key's lookup cached.
      assert.equal((await call(server, 'GET', '/v1/pets/1')).status, 404)
      await end(proxy, url)
      for (const id of [10, 11, 12]) {
        const answer = await call(server, 'GET', `/v1/pets/${id}`)
        assert.equal(answer.status, 404, answer.text)
      }
      assert.equal((await call(server, 'GET', '/v1/pets')).status, 200)
    })
  }

  test('when a call gives up waiting for a connection that is made after all, then that connection goes back to the pool, not held for good', async (t) => {
    // Every answer of the server passed on 0.3 s late: a new connection takes a second or so.
    const proxy = await startTcpProxy(t, await emptyDatabase(), { batchMs: 300 })
    const pool = new PostgresPool(storeOptions(proxy.url, { poolSize: 1 }))
    t.after(() => pool.close())
    const one = { name: 'one', text: 'SELECT 1 AS one' }
    // Its bound all but spent as it starts (it waited behind others): given up before the connection is made.
    const since = performance.now() - pool.callBoundMs + 100
    await assert.rejects(pool.query(one, { since }), StoreUnavailableError)
    // The pool's one connection, made late, serves the next call within the connect timeout.
    assert.deepEqual(await pool.query(one), [{ one: 1 }])
  })

  test('when the pool is closed with its deadline nearer than the close grace, then the close ends by the deadline, not a grace later', async () => {
    const pool = new PostgresPool(storeOptions(await emptyDatabase()))
    const startedAt = performance.now()
    // Work that never ends, as on a hung database; the stop must be done 50 ms from now.
    await pool.close(new Promise(() => {}), startedAt + 50)
    const tookMs = performance.now() - startedAt
    assert.ok(tookMs < CLOSE_GRACE_MS / 2, `closed after ${Math.round(tookMs)} ms, its deadline 50 ms away`)
  })
})
