import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { generateApiKey } from '../src/auth/api-key.ts'
import { waitFor } from './helpers/bounded-wait.ts'
import { temporaryDirectory } from './helpers/cleanup.ts'
import {
  CLI,
  cliEnvironment,
  exitWithin,
  requesterFor,
  runCli,
  type ServeProcess,
  startServeProcess,
} from './helpers/cli-process.ts'
import { exchange, openSocket } from './helpers/raw-http.ts'

const TYPE_STRIPPER_PROBE = fileURLToPath(new URL('./helpers/type-stripper-probe.mjs', import.meta.url))
const SLOW_COMPILE_CACHE_PROBE = fileURLToPath(
  new URL('./helpers/slow-compile-cache-probe.mjs', import.meta.url),
)
const SLOW_LISTENING_PROBE = fileURLToPath(new URL('./helpers/slow-listening-probe.mjs', import.meta.url))
const STILL_LOG_INTERVAL_PROBE = fileURLToPath(
  new URL('./helpers/still-log-interval-probe.mjs', import.meta.url),
)
const REPOSITORY = fileURLToPath(new URL('..', import.meta.url))

const key = generateApiKey()
const env = { API_KEYS: `ops:${key}` }
const request = requesterFor(key)

describe('start-up', () => {
  const probed = (cache: string) => ({
    ...env,
    NODE_COMPILE_CACHE: cache,
    NODE_OPTIONS: `--import=${TYPE_STRIPPER_PROBE}`,
  })

  test('when the command runs, then its entry point turns the compile cache on, next to the dependencies', async () => {
    const { status, stderr } = await runCli(
      ['--help'],
      { NODE_OPTIONS: `--import=${TYPE_STRIPPER_PROBE}` },
      REPOSITORY,
    )
    assert.equal(status, 0)
    assert.ok(stderr.includes(`compile cache: ${REPOSITORY}node_modules/.cache/petstore`), stderr)
  })

  test('when the service starts again with its code unchanged, then no types are stripped, even if the first start was killed', async (t) => {
    const cache = temporaryDirectory(t)
    const first = await startServeProcess(probed(cache), temporaryDirectory(t))
    t.after(() => first.child.kill('SIGKILL'))
    assert.equal((await request(first, '/v1/pets')).status, 200)
    first.child.kill('SIGKILL') // no exit hook runs: what the next start finds was written once listening
    await exitWithin(first)

    const startAndStop = async (cacheDirectory: string) => {
      const server = await startServeProcess(probed(cacheDirectory), temporaryDirectory(t))
      t.after(() => server.child.kill('SIGKILL'))
      assert.equal((await request(server, '/v1/pets')).status, 200)
      server.child.kill('SIGTERM')
      assert.equal(await exitWithin(server), 0)
      return server.output()
    }
    assert.match(await startAndStop(cache), /type stripper loaded: false/)
    const cold = await startAndStop(temporaryDirectory(t))
    assert.match(cold, /type stripper loaded: true/, 'with an empty cache, the probe does see types stripped')
  })

  test("when the service starts, then its start-up lines and the serving line are written at once, not held for the log's next batch", async (t) => {
    // The log is written in batches (docs/decisions.md, "The request log is buffered"); with its interval
    // stilled, only the start's own flush can bring the serving line that operators and supervisors wait for.
    const server = await startServeProcess(
      { ...env, NODE_OPTIONS: `--import=${STILL_LOG_INTERVAL_PROBE}` },
      temporaryDirectory(t),
    )
    t.after(() => server.child.kill('SIGKILL'))
    assert.match(server.output(), /"msg":"Server listening at http:[^"]*"\}\n.*"msg":"serving http:/)
    assert.equal((await request(server, '/v1/pets')).status, 200)
    server.child.kill('SIGTERM')
    assert.equal(await exitWithin(server), 0)
  })

  test('when writing the compile cache holds the event loop for longer than the delay limit, then no request is shed once the port is open', async (t) => {
    // A cold start on a busy host: the start's own work must be done before the port opens, so neither a
    // client nor the load shedder ever sees it.
    const server = await startServeProcess(
      {
        ...env,
        NODE_COMPILE_CACHE: temporaryDirectory(t),
        NODE_OPTIONS: `--import=${SLOW_COMPILE_CACHE_PROBE}`,
      },
      temporaryDirectory(t),
    )
    t.after(() => server.child.kill('SIGKILL'))
    const statuses: number[] = []
    for (const deadline = Date.now() + 2500; Date.now() < deadline; await sleep(50)) {
      statuses.push((await request(server, '/v1/pets')).status)
    }
    assert.deepEqual(
      statuses.filter((status) => status !== 200),
      [],
      `${statuses.length} requests over 2.5 s from the first answer`,
    )
  })
  test('when the port opens into a stall longer than the delay limit, then no request is shed and /readyz agrees', async (t) => {
    // The start's last cold paths on a busy host: the stall is the start's own, not an overload.
    const child = spawn(process.execPath, [CLI, 'serve'], {
      env: cliEnvironment({
        ...env,
        HOST: '127.0.0.1',
        PORT: '0',
        METRICS: 'off',
        LOG_LEVEL: 'info',
        NODE_OPTIONS: `--import=${SLOW_LISTENING_PROBE}`,
      }),
      cwd: temporaryDirectory(t),
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    t.after(() => child.kill('SIGKILL'))
    let output = ''
    for (const stream of [child.stdout, child.stderr]) {
      stream.on('data', (chunk) => {
        output += chunk
      })
    }
    const port = await waitFor(
      () => /slow-listening-probe: listening on (\d+)/.exec(output)?.[1],
      () => `the port did not open:\n${output}`,
      { timeoutMs: 15_000 },
    )
    const server = { origin: `http://127.0.0.1:${port}` } as ServeProcess
    // Sent while the port's stall holds the loop: read at its end, as a busy host's first clients are.
    const sockets = await Promise.all(Array.from({ length: 4 }, () => openSocket(server.origin)))
    t.after(() => {
      for (const socket of sockets) socket.destroy()
    })
    const first = await Promise.all(
      sockets.map((socket) =>
        exchange(socket, `GET /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n\r\n`),
      ),
    )
    const statuses = first.map((answer) => Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1]))
    const ready: number[] = []
    for (const deadline = Date.now() + 2500; Date.now() < deadline; await sleep(50)) {
      statuses.push((await request(server, '/v1/pets')).status)
      ready.push((await fetch(`${server.origin}/readyz`)).status)
    }
    assert.deepEqual(
      statuses.filter((status) => status !== 200),
      [],
      `${statuses.length} requests over 2.5 s from the first answer`,
    )
    assert.deepEqual(
      ready.filter((status) => status !== 200),
      [],
      'ready while every request is served',
    )
  })
})
