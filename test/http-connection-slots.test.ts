import assert from 'node:assert/strict'
import { once } from 'node:events'
import { connect, type Socket } from 'node:net'
import { describe, type TestContext, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { openFileLimit, warnOfOpenFileLimit } from '../src/cli/open-file-limit.ts'
import type { DatabaseSettings } from '../src/config.ts'
import { temporaryDirectory } from './helpers/cleanup.ts'
import { logLines, startServeProcess } from './helpers/cli-process.ts'
import { suiteNeedingPrlimit } from './helpers/suite-requirements.ts'
import { startTestServer, type TestServer, testConfig } from './helpers/test-server.ts'

const PROBE = 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'

/**
 * A server whose clients are all destroyed before it closes (closing waits for open connections, and these
 * clients never close theirs).
 */
async function startServerWithClients(t: TestContext, env: Record<string, string>) {
  const clients: Socket[] = []
  t.after(() => {
    for (const socket of clients) socket.destroy()
  })
  const server = await startTestServer(t, { env })
  return { server, clients }
}

/**
 * A client that never closes its side: it keeps its socket open (half-open once the server has ended its
 * side) and never answers the server's end, as a careless or hostile client may.
 */
async function clientThatNeverCloses(
  { server, clients }: { server: TestServer; clients: Socket[] },
  bytes: string,
) {
  const socket = connect({
    host: '127.0.0.1',
    port: Number(new URL(server.origin).port),
    allowHalfOpen: true,
  })
  clients.push(socket)
  socket.on('error', () => {}) // a reset once the server lets go is expected
  let received = ''
  socket.on('data', (chunk) => {
    received += chunk
  })
  await once(socket, 'connect')
  if (bytes !== '') socket.write(bytes)
  return { socket, received: () => received }
}

/** One request on a new connection: the status line's code, or undefined if refused or closed unanswered. */
function probe(server: TestServer): Promise<number | undefined> {
  return new Promise((resolve) => {
    const socket: Socket = connect({ host: '127.0.0.1', port: Number(new URL(server.origin).port) })
    let received = ''
    socket.setTimeout(3000, () => socket.destroy())
    socket.on('data', (chunk) => {
      received += chunk
    })
    socket.on('error', () => {})
    socket.on('connect', () => socket.write(PROBE))
    socket.on('close', () => {
      const status = /^HTTP\/1\.1 (\d{3}) /.exec(received)?.[1]
      resolve(status === undefined ? undefined : Number(status))
    })
  })
}

async function openConnections(server: TestServer): Promise<number> {
  return new Promise((resolve, reject) =>
    server.app.server.getConnections((error, count) => (error ? reject(error) : resolve(count))),
  )
}

/** Waits until the server counts `count` open connections (it sees a connect a moment after the client). */
async function untilServerCounts(server: TestServer, count: number) {
  const deadline = Date.now() + 5000
  while ((await openConnections(server)) !== count) {
    if (Date.now() > deadline) assert.fail(`the server never counted ${count} connections`)
    await sleep(10)
  }
}

/** Polls with new clients until one is served; fails if none is within `ms`. */
async function servedWithin(server: TestServer, ms: number, what: string) {
  const deadline = Date.now() + ms
  for (;;) {
    if ((await probe(server)) === 200) return
    if (Date.now() > deadline) {
      assert.fail(`${what}: no new client served within ${ms} ms (${await openConnections(server)} open)`)
    }
    await sleep(100)
  }
}

describe('connections the server has finished with give back their MAX_CONNECTIONS slot', () => {
  // Timeouts short for the test; Node checks them every second, and the grace after the answer is 1 s.
  // Keep-alive is long, so that no idle timer closes what the server should have let go of itself.
  const env = {
    MAX_CONNECTIONS: '3',
    HEADERS_TIMEOUT_MS: '1000',
    REQUEST_TIMEOUT_MS: '1000',
    KEEP_ALIVE_TIMEOUT_MS: '600000',
  }
  const BOUND_MS = 15_000

  for (const [form, bytes] of [
    ['send nothing at all', ''],
    ['send part of their headers, then nothing', 'GET /v1/pets HTTP/1.1\r\nHost: x\r\nX-Slow: 1\r\n'],
  ] as const) {
    test(`when MAX_CONNECTIONS clients ${form} and never close, then after the headers timeout they get 408 and a new client is served`, {
      timeout: 30_000,
    }, async (t) => {
      const running = await startServerWithClients(t, env)
      const { server } = running
      const silent = await Promise.all([0, 1, 2].map(() => clientThatNeverCloses(running, bytes)))
      await untilServerCounts(server, 3)
      assert.equal(await probe(server), undefined, 'while they are within their timeout, the cap holds')
      await servedWithin(server, BOUND_MS, form)
      for (const client of silent) assert.match(client.received(), /^HTTP\/1\.1 408 /)
    })
  }

  // No timeout of the request's own may free a slot below: only letting go after the answer does.
  const patient = { ...env, REQUEST_TIMEOUT_MS: '600000', HEADERS_TIMEOUT_MS: '600000', MAX_CONNECTIONS: '1' }

  for (const [what, bytes, status] of [
    ['CONNECT', 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n', 405],
    ['an Expect it cannot meet', 'GET /v1/pets HTTP/1.1\r\nHost: x\r\nExpect: teapot\r\n\r\n', 417],
    ['two Host headers', 'GET /v1/pets HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n', 400],
  ] as const) {
    test(`when a client sends ${what}, gets its ${status} and never closes, then its slot is given back`, {
      timeout: 30_000,
    }, async (t) => {
      const running = await startServerWithClients(t, patient)
      const client = await clientThatNeverCloses(running, bytes)
      await servedWithin(running.server, BOUND_MS, what)
      assert.match(client.received(), new RegExp(`^HTTP/1\\.1 ${status} `))
    })
  }

  test('when garbage follows a create on a connection that never closes, then the create is answered and the slot given back', {
    timeout: 30_000,
  }, async (t) => {
    const running = await startServerWithClients(t, patient)
    const { server } = running
    const body = '{"name":"then garbage","categoryId":1}'
    const client = await clientThatNeverCloses(
      running,
      `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${server.key}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}FOO /x HTTP/1.1\r\n\r\n`,
    )
    await servedWithin(server, BOUND_MS, 'create then garbage')
    assert.match(client.received(), /^HTTP\/1\.1 201 /)
  })
})

describe('the open-file limit', suiteNeedingPrlimit('the open-file limit check'), () => {
  test('when the process may open fewer files than MAX_CONNECTIONS needs, then the start says so at warn, naming both', async (t) => {
    const server = await startServeProcess(
      { METRICS: 'off', DATABASE_URL: 'sqlite::memory:', MAX_CONNECTIONS: '1000' },
      temporaryDirectory(t),
      { under: ['prlimit', '--nofile=256:256'] },
    )
    t.after(() => server.child.kill('SIGKILL'))
    const warned = logLines(server).filter((line) => line.openFileLimit !== undefined)
    assert.equal(warned.length, 1, server.output())
    assert.deepEqual([warned[0]?.level, warned[0]?.openFileLimit, warned[0]?.maxConnections], [40, 256, 1000])
  })
})

describe('the files the service keeps open', () => {
  test("when PostgreSQL's pool would take the files MAX_CONNECTIONS leaves, then the limit is said to be too low; with SQLite, not", () => {
    // This process's own limit, read as the service reads it; MAX_CONNECTIONS leaves 64 files and 25 more.
    const limit = openFileLimit()
    assert.ok(limit !== undefined && limit > 200, `an open-file limit to test under: ${limit}`)
    const maxConnections = limit - 64 - 25
    const sqlite = testConfig().database
    const postgres: DatabaseSettings = {
      engine: 'postgres',
      url: 'postgres://petstore@db/petstore',
      poolSize: 50,
      statementTimeoutMs: 5000,
      connectTimeoutMs: 5000,
      maxBatch: 500,
    }
    for (const [database, said] of [
      [sqlite, 0],
      [postgres, 1],
    ] as const) {
      const warnings: unknown[] = []
      warnOfOpenFileLimit(maxConnections, database, { warn: (...args: unknown[]) => warnings.push(args) })
      assert.equal(warnings.length, said, database.engine)
    }
  })
})
