import assert from 'node:assert/strict'
import { connect, type Socket } from 'node:net'
import { describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { generateApiKey } from '../src/auth/api-key.ts'
import { waitFor, waitUntil } from './helpers/bounded-wait.ts'
import { temporaryDirectory } from './helpers/cleanup.ts'
import {
  exitWithin,
  type LogLine,
  logLines,
  requesterFor,
  type ServeProcess,
  startServeProcess,
  waitForLog,
} from './helpers/cli-process.ts'
import {
  killIfRunning,
  scrapeSupervisor,
  servingWorkers,
  workersAfterCreates,
} from './helpers/cluster-process.ts'
import { checkRawText, conformanceAt } from './helpers/conformance-fetch.ts'
import { isRunning } from './helpers/process-children.ts'

const FAULT_PROBE = fileURLToPath(new URL('./helpers/fault-probe.mjs', import.meta.url))
const key = generateApiKey()
const request = requesterFor(key)
const faulty = (env: Record<string, string> = {}) => ({
  API_KEYS: `ops:${key}`,
  NODE_OPTIONS: `--import ${FAULT_PROBE}`,
  ...env,
})

function fatalLines(server: ServeProcess): LogLine[] {
  return logLines(server).filter((line) => line.level === 60)
}

/**
 * A createPet the server has taken in (it answered `100 Continue`, so the request is in flight) whose body
 * is held back until `finish` sends it; `finish` resolves with the raw answer.
 */
async function heldCreate(server: ServeProcess) {
  const { hostname, port } = new URL(server.origin)
  const socket: Socket = connect({ host: hostname, port: Number(port) })
  let received = ''
  socket.on('data', (chunk) => {
    received += chunk
  })
  socket.on('error', () => {})
  const body = '{"name":"held","categoryId":1}'
  socket.write(
    `POST /v1/pets HTTP/1.1\r\nHost: petstore\r\nAuthorization: Bearer ${key}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${body.length}\r\nExpect: 100-continue\r\n\r\n`,
  )
  await waitUntil(
    () => received.includes('100 Continue'),
    () => `the 100 Continue: ${received}`,
  )
  return {
    socket,
    async finish(): Promise<string> {
      socket.write(body)
      const answered = /HTTP\/1\.1 [2-5]\d\d [^\r]*\r\n[\s\S]*?\r\n\r\n\{[\s\S]*\}$/
      const text = await waitFor(
        () => (answered.test(received) ? received : undefined),
        () => `an answer: ${received}`,
      )
      const answer = text.slice(text.indexOf('\r\n\r\n') + 4)
      await checkRawText(server.origin, 'POST', '/v1/pets', answer)
      return answer
    },
  }
}

describe('process-level failures', () => {
  test('when code started by a request throws outside its promise chain, then one fatal line names the request, the listener closes, the request in flight is answered and the process exits 1', async (t) => {
    const server = await startServeProcess(faulty(), temporaryDirectory(t))
    t.after(() => server.child.kill('SIGKILL'))
    await conformanceAt(server.origin)
    const held = await heldCreate(server)
    t.after(() => held.socket.destroy())

    // Its error message quotes the URL, which holds a key sent by mistake.
    const faulting = await request(server, `/v1/pets?limit=1&x=${key}`, {
      headers: { 'x-test-fault': 'throw', 'x-request-id': 'fault-1' },
    })
    assert.equal(faulting.status, 400, 'the request whose code failed was answered')
    const fatal = await waitForLog(server, (lines) => lines.find((line) => line.level === 60))
    assert.equal(fatal.reqId, 'fault-1')
    assert.equal(fatal.origin, 'uncaughtException')
    const err = fatal.err as { message: string; stack: string }
    assert.equal(err.message, 'injected exception answering /v1/pets?limit=1&x=psk_[redacted]')
    assert.match(err.stack, /fault-probe\.mjs/)

    // Stop accepting: a new connection is refused once the listener is closed.
    let refused = false
    for (let attempt = 0; attempt < 100 && !refused; attempt++) {
      refused = await request(server, '/healthz').then(
        () => false,
        () => true,
      )
      if (!refused) await sleep(20)
    }
    assert.ok(refused, 'new connections are refused after the failure')

    const answer = await held.finish()
    assert.match(answer, /HTTP\/1\.1 201 /, 'the request in flight is answered')
    assert.equal(await exitWithin(server, 10_000), 1)
    assert.equal(fatalLines(server).length, 1, 'logged once')
    assert.doesNotMatch(server.output(), /requests in flight are cut/, 'drained, not cut at the bound')
    assert.doesNotMatch(
      server.output(),
      /^Error: injected|^\s+at /m,
      "no stack outside the log line (Node's own report)",
    )
    assert.equal(
      server.output().includes(key.slice(4)),
      false,
      'the key is masked in the error and its stack',
    )
  })

  // The grace is the drain's bound, SHUTDOWN_TIMEOUT_MS, up to 5 s at most.
  for (const [shutdownTimeoutMs, graceMs] of [
    [undefined, 5000],
    ['1000', 1000],
  ] as const) {
    const bound = shutdownTimeoutMs === undefined ? '' : ` (SHUTDOWN_TIMEOUT_MS=${shutdownTimeoutMs})`
    test(`when a promise is rejected with nobody to handle it, outside any request, then one fatal line and exit 1 within the grace${bound}, though a request is still in flight`, async (t) => {
      const env = {
        TEST_FAULT: 'reject',
        ...(shutdownTimeoutMs && { SHUTDOWN_TIMEOUT_MS: shutdownTimeoutMs }),
      }
      const server = await startServeProcess(faulty(env), temporaryDirectory(t))
      t.after(() => server.child.kill('SIGKILL'))
      // Its body never comes: only the bound ends the drain.
      const held = await heldCreate(server)
      t.after(() => held.socket.destroy())
      const started = Date.now()
      server.child.kill('SIGUSR2')
      assert.equal(await exitWithin(server, graceMs + 10_000), 1)
      const waited = Date.now() - started
      const [fatal, ...more] = fatalLines(server)
      assert.ok(fatal, `a fatal line:\n${server.output()}`)
      assert.equal(more.length, 0)
      assert.equal(fatal.origin, 'unhandledRejection')
      assert.equal((fatal.err as { message: string }).message, 'injected rejection')
      assert.equal(fatal.reqId, undefined, 'no request was running it')
      assert.ok(waited >= graceMs * 0.8, `the request in flight had its grace (${waited} ms)`)
      assert.match(
        server.output(),
        new RegExp(`still stopping ${graceMs} ms after the failure: exiting, requests in flight are cut`),
      )
    })
  }
})

describe('what is not a failure', () => {
  test('when its stderr reader is gone and it writes there (NODE_DEBUG), then it keeps serving', async (t) => {
    const server = await startServeProcess(
      { API_KEYS: `ops:${key}`, NODE_DEBUG: 'http' },
      temporaryDirectory(t),
    )
    t.after(() => server.child.kill('SIGKILL'))
    server.child.stderr?.destroy()
    // Every answer writes debug lines on stderr: the first fails with EPIPE.
    for (let i = 0; i < 20; i++) assert.equal((await request(server, '/v1/pets?limit=5')).status, 200)
    await sleep(500)
    assert.equal(server.child.exitCode, null, `the server exited:\n${server.output()}`)
    assert.equal((await request(server, '/v1/pets?limit=5')).status, 200)
  })
})

describe('process-level failures while shutting down', () => {
  test('when a failure comes while a SIGTERM drain is under way, then the process still exits 1, not 0', async (t) => {
    const server = await startServeProcess(faulty({ TEST_FAULT: 'throw' }), temporaryDirectory(t))
    t.after(() => server.child.kill('SIGKILL'))
    await conformanceAt(server.origin)
    const held = await heldCreate(server)
    t.after(() => held.socket.destroy())
    server.child.kill('SIGTERM')
    await waitForLog(server, (lines) => lines.find((line) => line.msg === 'shutting down'))
    server.child.kill('SIGUSR2')
    await waitForLog(server, (lines) => lines.find((line) => line.level === 60))
    assert.match(await held.finish(), /HTTP\/1\.1 201 /, 'the drain goes on')
    assert.equal(await exitWithin(server, 10_000), 1)
  })
})

describe('process-level failures under WORKERS', () => {
  test('when a worker fails, then it exits 1, the supervisor replaces it, and its counts stay in the summed metrics', async (t) => {
    const sent = 100
    // A worker that created some; never scraped: only its last report can bring them to the supervisor.
    const { server, creator: failing } = await workersAfterCreates(t, faulty({ WORKERS: '2' }), request, sent)
    process.kill(failing, 'SIGUSR2')
    const death = await waitForLog(server, (lines) =>
      lines.find((line) => line.msg === 'a worker died; replacing it' && line.worker === failing),
    )
    assert.equal(death.exitCode, 1)
    assert.ok(fatalLines(server).some((line) => line.pid === failing))
    await servingWorkers(server, 3)
    assert.equal((await request(server, '/v1/pets')).status, 200)

    const scrape = await scrapeSupervisor(server)
    assert.equal(scrape.get('petstore_pets_created_total'), sent)
  })
})

describe('a failure of the WORKERS supervisor itself', () => {
  test('when the supervisor throws, then it logs one fatal line, drains its workers, kills one that does not stop, and exits 1 within the bound', async (t) => {
    const env = faulty({ WORKERS: '2', TEST_FAULT: 'throw', SHUTDOWN_TIMEOUT_MS: '1000' })
    const server = await startServeProcess(env, temporaryDirectory(t))
    t.after(() => server.child.kill('SIGKILL'))
    const [stuck, draining] = (await servingWorkers(server, 2)) as [number, number]
    t.after(() => {
      for (const pid of [stuck, draining]) killIfRunning(pid)
    })
    // A worker that cannot stop: frozen, it never acts on the supervisor's SIGTERM.
    process.kill(stuck, 'SIGSTOP')
    server.child.kill('SIGUSR2')
    // The workers' drain (SHUTDOWN_TIMEOUT_MS) and the supervisor's 5 s margin, then the kill; and a little.
    assert.equal(await exitWithin(server, 1000 + 5000 + 3000), 1)

    const [fatal, ...more] = fatalLines(server)
    assert.ok(fatal, `a fatal line:\n${server.output()}`)
    assert.equal(more.length, 0, 'logged once')
    assert.equal(fatal.pid, server.child.pid, "the supervisor's own")
    assert.equal((fatal.err as { message: string }).message, 'injected exception')
    const lines = logLines(server)
    assert.ok(
      lines.some((line) => line.pid === draining && line.msg === 'shutting down'),
      `the other worker drained:\n${server.output()}`,
    )
    assert.ok(
      lines.some((line) => line.worker === stuck && line.msg === 'a worker did not stop in time; killing it'),
      `the stuck worker was killed:\n${server.output()}`,
    )
    assert.doesNotMatch(server.output(), /still stopping/, 'the drain ended it, not the backstop')
    assert.deepEqual(
      lines.filter((line) => line.msg === 'a worker died; replacing it'),
      [],
      'no worker replaced while stopping',
    )
    for (const pid of [stuck, draining]) {
      await waitUntil(() => !isRunning(pid), `worker ${pid} gone`, { timeoutMs: 2000 })
    }
  })
})
