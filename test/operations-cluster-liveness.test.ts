import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { generateApiKey } from '../src/auth/api-key.ts'
import { temporaryDirectory } from './helpers/cleanup.ts'
import { logLines, requesterFor, startServeProcess, waitForLog } from './helpers/cli-process.ts'
import { killIfRunning, scrapeSupervisor, servingWorkers } from './helpers/cluster-process.ts'

const key = generateApiKey()
const request = requesterFor(key)
// The shortest timeout allowed, so that a worker that stops answering is found within seconds.
const env = { API_KEYS: `ops:${key}`, WORKERS: '2', WORKER_LIVENESS_TIMEOUT_MS: '1000' }
const UNRESPONSIVE = 'a worker has not answered for WORKER_LIVENESS_TIMEOUT_MS; killing it'

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
    // Silent since its last answer, which may have come up to a check's interval (250 ms) before the stop.
    const waited = Number(killed.time) - stopped
    assert.ok(waited >= 1000 - 250 - 50, `killed ${waited} ms after it stopped, before its timeout`)
    assert.ok(Number(killed.silentMs) >= 1000, `killed after ${killed.silentMs} ms of silence`)
    assert.equal(killed.level, 50, 'said at error')
    const replacement = (await servingWorkers(server, 3))[2] as number
    assert.ok(![stuck, other].includes(replacement), 'a new process')

    // Every connection now reaches a worker that answers: none is handed to the stopped one.
    const statuses = await Promise.all(
      Array.from({ length: 20 }, async () => (await request(server, '/v1/pets')).status),
    )
    assert.deepEqual([...new Set(statuses)], [200])
    const samples = await scrapeSupervisor(server)
    assert.equal(samples.get('petstore_worker_restarts_total{cause="unresponsive"}'), 1)
    assert.equal(samples.get('petstore_worker_restarts_total{cause="died"}'), 0)
    server.child.kill('SIGTERM')
  })

  test('when the supervisor itself is paused for longer than WORKER_LIVENESS_TIMEOUT_MS, then on waking it kills no worker that answers', async (t) => {
    // Two seconds: a worker's loop held up by a loaded host must not be what this test finds.
    const timeoutMs = 2000
    const server = await startServeProcess(
      { ...env, WORKER_LIVENESS_TIMEOUT_MS: String(timeoutMs) },
      temporaryDirectory(t),
    )
    t.after(() => server.child.kill('SIGKILL'))
    const workers = await servingWorkers(server, 2)
    server.child.kill('SIGSTOP')
    await sleep(2 * timeoutMs)
    server.child.kill('SIGCONT')
    // Long enough for the supervisor to ask each worker again, and to judge a silence of its timeout.
    await sleep(1.5 * timeoutMs)
    assert.equal(
      logLines(server).find((line) => line.msg === UNRESPONSIVE),
      undefined,
      'a worker was killed',
    )
    const replaced = logLines(server).find((line) => String(line.msg).endsWith('; replacing it'))
    assert.equal(replaced, undefined, `the workers ${workers.join(' and ')} were not all kept`)
    const samples = await scrapeSupervisor(server)
    assert.equal(samples.get('petstore_worker_restarts_total{cause="unresponsive"}'), 0)
    server.child.kill('SIGTERM')
  })
})
