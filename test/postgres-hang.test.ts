import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { generateApiKey } from '../src/auth/api-key.ts'
import { EXIT_RESERVE_MS, SHUTDOWN_MARGIN_MS } from '../src/server.ts'
import { CLOSE_GRACE_MS } from '../src/store/postgres/postgres-connection.ts'
import { waitFor } from './helpers/bounded-wait.ts'
import { temporaryDirectory } from './helpers/cleanup.ts'
import { exitWithin, logLines, startServeProcess } from './helpers/cli-process.ts'
import {
  assertAllStored,
  assertAnsweredWithin,
  awaitRecovery,
  loadAcross,
  startLoad,
  timedCall,
} from './helpers/outage-load.ts'
import {
  sharedPostgres,
  startThrowawayPostgres,
  throwawayPostgresSuiteOptions,
} from './helpers/postgres-server.ts'
import { adminOn } from './helpers/postgres-store-fixtures.ts'
import { rawHttp } from './helpers/raw-http.ts'
import { startTcpProxy } from './helpers/tcp-proxy.ts'

// Room for a loaded 2-core CI machine on top of each bound: far below what the old code took.
const SLACK_MS = 1000
// The default PostgreSQL timeouts: waiting out either before giving up would take a stop past its hard
// limit of SHUTDOWN_TIMEOUT_MS + 2 s.
const [DEFAULT_CONNECT_MS, DEFAULT_STATEMENT_MS] = [2000, 5000]

/** A serve process on `databaseUrl` with these PostgreSQL timeouts, its key lookups cached all test long. */
async function startService(
  t: Parameters<typeof temporaryDirectory>[0],
  databaseUrl: string,
  settings: Record<string, string>,
) {
  const key = generateApiKey()
  const service = await startServeProcess(
    {
      DATABASE_URL: databaseUrl,
      API_KEYS: `hang:${key}`,
      // Cached keys let creates reach the write batch (an uncached lookup would fail first); no cached
      // answers, so every read needs the database.
      API_KEY_CACHE_TTL_MS: '600000',
      READ_CACHE_BYTES: '0',
      RATE_LIMIT_PER_MINUTE: '0',
      ...settings,
    },
    temporaryDirectory(t),
  )
  t.after(() => service.child.kill('SIGKILL'))
  assert.equal((await timedCall(service.origin, key, 'GET', '/v1/pets')).status, 200, 'serving')
  return { service, key }
}

describe('PostgreSQL that hangs', throwawayPostgresSuiteOptions(), () => {
  test('when every PostgreSQL process is frozen under create load, then every request is answered 503 within PG_CONNECT_TIMEOUT_MS + PG_STATEMENT_TIMEOUT_MS + 1 s, and after it thaws creates succeed and no acknowledged pet is lost', async (t) => {
    const postgres = await startThrowawayPostgres()
    t.after(() => postgres.stop('immediate'))
    t.after(() => postgres.thaw())
    const databaseUrl = await postgres.createDatabase()
    const [connectMs, statementMs] = [500, 1000]
    const { service, key } = await startService(t, databaseUrl, {
      PG_CONNECT_TIMEOUT_MS: String(connectMs),
      PG_STATEMENT_TIMEOUT_MS: String(statementMs),
      PG_POOL_SIZE: '4',
    })
    const bound = connectMs + statementMs + 1000
    // Long enough for creates to queue behind batches that hang, several times over.
    const { answers, faultAt } = await loadAcross(t, service.origin, key, () => postgres.freeze(), 3 * bound)
    postgres.thaw()
    t.diagnostic(`frozen: ${assertAnsweredWithin(answers, faultAt, bound, SLACK_MS)}`)

    const recovered = await awaitRecovery(service.origin, key)
    const stored = await assertAllStored(databaseUrl, [...answers, recovered])
    assert.ok(stored > 1, 'creates were acknowledged before the freeze')
  })

  test('when PostgreSQL freezes after a create was sent, then its 503 says the pet may have been made, and it was: a retry with its Idempotency-Key answers with that pet, no second one', async (t) => {
    const postgres = await startThrowawayPostgres()
    t.after(() => postgres.stop('immediate'))
    t.after(() => postgres.thaw())
    const databaseUrl = await postgres.createDatabase()
    // One connection, left open and idle by the first read: the create is sent on it, to a frozen server.
    const { service, key } = await startService(t, databaseUrl, {
      PG_CONNECT_TIMEOUT_MS: '500',
      PG_STATEMENT_TIMEOUT_MS: '1000',
      PG_POOL_SIZE: '1',
    })
    const create = () =>
      fetch(`${service.origin}/v1/pets`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${key}`,
          'content-type': 'application/json',
          'idempotency-key': 'in-doubt-1',
        },
        body: '{"name":"InDoubt","categoryId":1}',
      })
    const keyless = () =>
      fetch(`${service.origin}/v1/pets`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: '{"name":"Queued","categoryId":1}',
      })
    const messageOf = async (response: Response) => {
      const body = (await response.json()) as { code: string; message: string }
      assert.deepEqual([response.status, body.code], [503, 'service_unavailable'])
      assert.equal(response.headers.get('retry-after'), '1')
      return body.message
    }
    postgres.freeze()
    const sent = create()
    // Queued behind it, never sent: not in doubt.
    await sleep(200)
    const queued = keyless()
    assert.match(await messageOf(await sent), /may have been made: retry with the same Idempotency-Key/)
    assert.equal(await messageOf(await queued), 'the store is unavailable; retry shortly')
    postgres.thaw()

    const retried = await waitFor(
      async () => {
        const response = await create()
        return response.status === 201 ? response : undefined
      },
      'no 201 after the thaw',
      { timeoutMs: 10_000, everyMs: 200 },
    )
    assert.equal(retried.headers.get('idempotent-replayed'), 'true', 'the first create was committed')
    const admin = await adminOn(t, databaseUrl)
    const { rows } = await admin.query("SELECT count(*)::int AS n FROM pets WHERE name = 'InDoubt'")
    assert.equal(rows[0]?.n, 1)

    // Without a key, nothing to retry with: the answer says to look for the pet first.
    postgres.freeze()
    const unkeyed = keyless()
    assert.match(await messageOf(await unkeyed), /may have been made: look for it before creating it again/)
    postgres.thaw()
  })

  test("when every PostgreSQL process is frozen, then /readyz answers 503 with Retry-After after its 0.9 s bound, not at the store's timeouts nor never, /healthz stays 200, and once it thaws /readyz is 200 again", async (t) => {
    const postgres = await startThrowawayPostgres()
    t.after(() => postgres.stop('immediate'))
    t.after(() => postgres.thaw())
    // The default timeouts, far past the probe's bound: the answer comes from the bound.
    const { service } = await startService(t, await postgres.createDatabase(), {})
    assert.equal((await fetch(`${service.origin}/readyz`)).status, 200)
    postgres.freeze()
    const asked = performance.now()
    const response = await fetch(`${service.origin}/readyz`, { signal: AbortSignal.timeout(10_000) })
    const tookMs = performance.now() - asked
    const body = (await response.json()) as { code: string; message: string }
    assert.deepEqual(
      [response.status, response.headers.get('retry-after'), body.code, body.message],
      [503, '1', 'service_unavailable', 'not ready: the store did not answer within 0.9 s'],
    )
    assert.ok(tookMs >= 850 && tookMs < DEFAULT_CONNECT_MS, `answered after ${Math.round(tookMs)} ms`)
    assert.equal((await fetch(`${service.origin}/healthz`)).status, 200, 'alive while not ready')
    postgres.thaw()
    await waitFor(
      async () => ((await fetch(`${service.origin}/readyz`)).status === 200 ? true : undefined),
      () => '/readyz did not answer 200 once PostgreSQL thawed',
      { everyMs: 200 },
    )
  })

  test('when the database address accepts connections but never answers, then creates and reads are answered 503 within PG_CONNECT_TIMEOUT_MS, not twice it', async (t) => {
    const proxy = await startTcpProxy(t, await (await sharedPostgres()).createDatabase())
    const connectMs = 2000
    const { service, key } = await startService(t, proxy.url, {
      PG_CONNECT_TIMEOUT_MS: String(connectMs),
      PG_STATEMENT_TIMEOUT_MS: '1000',
    })
    // Creates keep arriving while a batch waits for its connection: none may wait for two of them.
    const { answers, faultAt } = await loadAcross(
      t,
      service.origin,
      key,
      () => proxy.silence(),
      2.5 * connectMs,
    )
    proxy.restore()
    t.diagnostic(`silent: ${assertAnsweredWithin(answers, faultAt, connectMs, SLACK_MS)}`)
    await awaitRecovery(service.origin, key)
  })

  for (const [when, frozenForMs] of [
    // Pooled connections hang with the calls the freeze caught: a last write on one waits for its timeout.
    ['soon after the freeze, while its pooled connections hang', 300],
    // Every connection open at the freeze has timed out and been destroyed: any call waits for a new one.
    ['once every connection open at the freeze is gone', DEFAULT_STATEMENT_MS + 1000 + 500],
  ] as const) {
    test(`when PostgreSQL freezes under load with getPet calls and the service gets SIGTERM ${when}, then it exits 0 before its hard limit of SHUTDOWN_TIMEOUT_MS + 2 s, and one line reports the deprecated-call counts not recorded`, async (t) => {
      const postgres = await startThrowawayPostgres()
      t.after(() => postgres.stop('immediate'))
      t.after(() => postgres.thaw())
      const shutdownMs = 2000
      const { service, key } = await startService(t, await postgres.createDatabase(), {
        SHUTDOWN_TIMEOUT_MS: String(shutdownMs),
        PG_CONNECT_TIMEOUT_MS: String(DEFAULT_CONNECT_MS),
        PG_STATEMENT_TIMEOUT_MS: String(DEFAULT_STATEMENT_MS),
        PG_POOL_SIZE: '4',
      })
      const created = await timedCall(
        service.origin,
        key,
        'POST',
        '/v1/pets',
        '{"name":"old","categoryId":7}',
      )
      const getPetId = /"id":(\d+)/.exec(created.text)?.[1]
      const load = await startLoad(t, service.origin, key, { getPetId })
      await sleep(300)
      postgres.freeze()
      await sleep(frozenForMs)
      const signalledAt = performance.now()
      service.child.kill('SIGTERM')
      // Its own hard stop ends it at SHUTDOWN_TIMEOUT_MS + SHUTDOWN_MARGIN_MS at the latest.
      const exit = await exitWithin(service, shutdownMs + SHUTDOWN_MARGIN_MS + 5000)
      const tookMs = performance.now() - signalledAt
      await load.stop()

      // The drain (cut at SHUTDOWN_TIMEOUT_MS), then the app's last writes and the store's close together,
      // done by the hard limit less the exit's reserve: the close grace ends there.
      const bound = shutdownMs + SHUTDOWN_MARGIN_MS - EXIT_RESERVE_MS
      const lines = logLines(service) as Array<{
        msg?: string
        deprecatedCalls?: Array<{ key: string; calls: number }>
      }>
      assert.equal(exit, 0, service.output().slice(-2000))
      assert.ok(
        tookMs <= bound + SLACK_MS,
        `exited ${Math.round(tookMs)} ms after SIGTERM (bound ${bound} ms)`,
      )
      const reports = lines.filter((line) => line.msg === 'deprecated-call counts not recorded at shutdown')
      assert.equal(reports.length, 1, service.output().slice(-2000))
      const calls = reports[0]?.deprecatedCalls?.find((count) => count.key === 'hang')?.calls ?? 0
      assert.ok(calls > 0, `getPet calls of key "hang" in the report: ${JSON.stringify(reports[0])}`)
      t.diagnostic(
        `exited ${Math.round(tookMs)} ms after SIGTERM (bound ${bound} ms); ${calls} calls reported`,
      )
    })
  }

  test('when PostgreSQL is healthy but the last deprecated-call write waits on a lock past the close grace at SIGTERM, then the write is committed, no count is reported lost, and the service exits 0', async (t) => {
    const databaseUrl = await (await sharedPostgres()).createDatabase()
    const key = generateApiKey()
    const shutdownMs = 2000
    const service = await startServeProcess(
      {
        DATABASE_URL: databaseUrl,
        API_KEYS: `busy:${key}`,
        API_KEY_CACHE_TTL_MS: '600000',
        RATE_LIMIT_PER_MINUTE: '0',
        SHUTDOWN_TIMEOUT_MS: String(shutdownMs),
      },
      temporaryDirectory(t),
    )
    t.after(() => service.child.kill('SIGKILL'))
    // Each on a connection of its own that closes after the answer, so the drain has none to wait for.
    const send = (method: string, path: string, body = '') =>
      rawHttp(
        service.origin,
        `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\n` +
          `Content-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
      )
    const created = await send('POST', '/v1/pets', '{"name":"busy","categoryId":7}')
    assert.equal(created.status, 201, created.body)
    const id = /"id":(\d+)/.exec(created.body)?.[1]
    // The key's row locked by another session before any count is written: every write of them waits.
    const admin = await adminOn(t, databaseUrl)
    await admin.query('BEGIN')
    await admin.query('SELECT 1 FROM api_keys WHERE name = $1 FOR UPDATE', ['busy'])
    for (let call = 0; call < 3; call++) assert.equal((await send('GET', `/v1/pets/${id}`)).status, 200)

    const exitedAt = service.exited.then(() => performance.now())
    const signalledAt = performance.now()
    service.child.kill('SIGTERM')
    // Held past the store's 1 s close grace, well within the stop's bound of SHUTDOWN_TIMEOUT_MS + 2 s.
    const heldMs = CLOSE_GRACE_MS + 1000
    await sleep(heldMs)
    await admin.query('COMMIT')
    const exit = await exitWithin(service, shutdownMs + SHUTDOWN_MARGIN_MS + 5000)
    const tookMs = (await exitedAt) - signalledAt

    assert.equal(exit, 0, service.output().slice(-2000))
    const warnings = logLines(service).filter((line) => Number(line.level) >= 40)
    assert.deepEqual(warnings, [], 'nothing reported lost or failed')
    const { rows } = await admin.query<{ deprecated_calls: string }>(
      'SELECT deprecated_calls::text FROM api_keys WHERE name = $1',
      ['busy'],
    )
    assert.deepEqual(rows, [{ deprecated_calls: '3' }], 'the three getPet calls were recorded')
    assert.ok(tookMs >= heldMs, `exited ${Math.round(tookMs)} ms after SIGTERM, before the lock was let go`)
    t.diagnostic(`exited ${Math.round(tookMs)} ms after SIGTERM, the lock held ${heldMs} ms`)
  })
})
