import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { generateApiKey } from '../src/auth/api-key.ts'
import { Silences } from '../src/cli/supervisor/worker-liveness.ts'
import { temporaryDirectory } from './helpers/cleanup.ts'
import { exitWithin, logLines, requesterFor, startServeProcess, waitForLog } from './helpers/cli-process.ts'
import { killIfRunning, scrapeSupervisor, servingWorkers } from './helpers/cluster-process.ts'

const key = generateApiKey()
const request = requesterFor(key)
// Two seconds (checked every 0.5 s): a worker that stops answering is found within seconds, and a worker
// held up by a loaded host for less than a second is not.
const TIMEOUT_MS = 2000
const INTERVAL_MS = TIMEOUT_MS / 4
const env = { API_KEYS: `ops:${key}`, WORKERS: '2', WORKER_LIVENESS_TIMEOUT_MS: String(TIMEOUT_MS) }
const UNRESPONSIVE = 'a worker has not answered for WORKER_LIVENESS_TIMEOUT_MS; killing it'

describe('silence counted', () => {
  test('when a worker answers every check, then it is never found silent, however long it runs', () => {
    const silences = new Silences<string>(TIMEOUT_MS, INTERVAL_MS)
    silences.watch('w', 0)
    for (let at = INTERVAL_MS; at < 100 * INTERVAL_MS; at += INTERVAL_MS) {
      assert.deepEqual(silences.count(at), [])
      silences.answered('w', at + 5)
    }
  })

  test('when a worker stops answering, then it is found once its silence reaches the timeout, and not before', () => {
    const silences = new Silences<string>(TIMEOUT_MS, INTERVAL_MS)
    silences.watch('stuck', 0)
    silences.watch('fine', 0)
    const found = []
    for (let at = INTERVAL_MS; found.length === 0; at += INTERVAL_MS) {
      found.push(...silences.count(at))
      silences.answered('fine', at + 5)
      assert.ok(at <= TIMEOUT_MS, `not found by ${at} ms`)
    }
    assert.deepEqual(found, [{ worker: 'stuck', silentMs: TIMEOUT_MS }])
    assert.deepEqual([...silences.watched()], ['fine'], 'found once, then watched no more')
  })

  test('when the supervisor did not run for longer than the timeout, then the silence counts at most two intervals of it', () => {
    const silences = new Silences<string>(TIMEOUT_MS, INTERVAL_MS)
    silences.watch('w', 0)
    assert.deepEqual(silences.count(INTERVAL_MS), [])
    assert.deepEqual(silences.count(INTERVAL_MS + 60_000), [], "a minute away is not the worker's silence")
    silences.answered('w', INTERVAL_MS + 60_001)
    assert.deepEqual(silences.count(2 * INTERVAL_MS + 60_000), [])
  })

  test('when the supervisor is late on every check, then a stuck worker is still found', () => {
    const silences = new Silences<string>(TIMEOUT_MS, INTERVAL_MS)
    silences.watch('stuck', 0)
    const late = 3 * INTERVAL_MS
    let counts = 0
    let found: unknown[] = []
    while (found.length === 0 && counts < 100) found = silences.count(++counts * late)
    assert.equal(counts, TIMEOUT_MS / (2 * INTERVAL_MS))
  })
})

describe('a worker that stops answering', () => {
  test('when a worker stops answering (SIGSTOP), then the supervisor kills it after WORKER_LIVENESS_TIMEOUT_MS, replaces it, and counts the restart', async (t) => {
    const server = await startServeProcess(env, temporaryDirectory(t))
    t.after(() => server.child.kill('SIGKILL'))
    const [stuck, other] = (await servingWorkers(server, 2)) as [number, number]
    t.after(() => killIfRunning(stuck))
    const stopped = Date.now()
    process.kill(stuck, 'SIGSTOP')

    const killed = await waitForLog(server, (lines) =>
      lines.find((line) => line.msg === UNRESPONSIVE && line.worker === stuck),
    )
    // Silent since its last answer, which may have come a check or two before the stop.
    const waited = Number(killed.time) - stopped
    assert.ok(waited >= TIMEOUT_MS - 2 * INTERVAL_MS, `killed ${waited} ms after it stopped`)
    assert.ok(Number(killed.silentMs) >= TIMEOUT_MS, `killed after ${killed.silentMs} ms of silence`)
    assert.equal(killed.level, 50, 'said at error')
    const replacement = (await servingWorkers(server, 3))[2] as number
    assert.ok(![stuck, other].includes(replacement), 'a new process')
    const exited = logLines(server).find((line) => line.worker === stuck && line.cause === 'unresponsive')
    assert.equal(exited?.msg, 'a worker killed for not answering exited; replacing it', server.output())

    // Every connection now reaches a worker that answers.
    const statuses = await Promise.all(
      Array.from({ length: 20 }, async () => (await request(server, '/v1/pets')).status),
    )
    assert.deepEqual([...new Set(statuses)], [200])
    const samples = await scrapeSupervisor(server)
    assert.equal(samples.get('petstore_worker_restarts_total{cause="unresponsive"}'), 1)
    assert.equal(samples.get('petstore_worker_restarts_total{cause="died"}'), 0)
    server.child.kill('SIGTERM')
    assert.equal(await exitWithin(server), 0, 'the service still stops cleanly')
  })

  test('when the supervisor itself is paused for longer than WORKER_LIVENESS_TIMEOUT_MS, then on waking it kills no worker that answers, and still finds one that stops answering', async (t) => {
    const server = await startServeProcess(env, temporaryDirectory(t))
    t.after(() => server.child.kill('SIGKILL'))
    const workers = await servingWorkers(server, 2)
    server.child.kill('SIGSTOP')
    await sleep(2 * TIMEOUT_MS)
    server.child.kill('SIGCONT')
    // Long enough for the supervisor to ask each worker again, and to judge a silence of its timeout.
    await sleep(1.5 * TIMEOUT_MS)
    assert.equal(
      logLines(server).find((line) => line.msg === UNRESPONSIVE),
      undefined,
      'a worker was killed',
    )
    const replaced = logLines(server).find((line) => String(line.msg).endsWith('; replacing it'))
    assert.equal(replaced, undefined, `the workers ${workers.join(' and ')} were not all kept`)
    const samples = await scrapeSupervisor(server)
    assert.equal(samples.get('petstore_worker_restarts_total{cause="unresponsive"}'), 0)
    // Still checking after its pause: a worker that stops answering now is found.
    const [stuck] = workers as [number]
    t.after(() => killIfRunning(stuck))
    process.kill(stuck, 'SIGSTOP')
    await waitForLog(server, (lines) =>
      lines.find((line) => line.msg === UNRESPONSIVE && line.worker === stuck),
    )
    await servingWorkers(server, 3)
    server.child.kill('SIGTERM')
    assert.equal(await exitWithin(server), 0)
  })
})
