import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { generateApiKey } from '../src/auth/api-key.ts'
import { waitUntil } from './helpers/bounded-wait.ts'
import { temporaryDirectory } from './helpers/cleanup.ts'
import { exitWithin, requesterFor, type ServeProcess, startServeProcess } from './helpers/cli-process.ts'
import { servingWorkers } from './helpers/cluster-process.ts'

const key = generateApiKey()
const request = requesterFor(key)

async function notReady(server: ServeProcess): Promise<void> {
  await waitUntil(
    async () => (await fetch(`${server.origin}/readyz`, { headers: { connection: 'close' } })).status === 503,
    'not ready',
    { timeoutMs: 2000 },
  )
}

// SHUTDOWN_DELAY_MS under WORKERS: the supervisor passes a stop on to its workers, which may also get the
// signal themselves (a terminal's Ctrl-C, systemd's control-group kill): one stop, asked twice, is one.
describe('WORKERS: a stop announced first', () => {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    test(`when ${signal} reaches the supervisor and every worker at once (a terminal's Ctrl-C, a kill of the whole group), then the delay is kept: not ready, still served, then the drain and exit 0`, async (t) => {
      // Long enough for the checks below on a loaded machine: each must land inside the delay.
      const delayMs = 6000
      const env = { API_KEYS: `ops:${key}`, WORKERS: '2', SHUTDOWN_DELAY_MS: String(delayMs) }
      const server = await startServeProcess(env, temporaryDirectory(t))
      t.after(() => server.child.kill('SIGKILL'))
      const workers = await servingWorkers(server, 2)
      const signalled = performance.now()
      for (const pid of [server.child.pid as number, ...workers]) process.kill(pid, signal)
      await notReady(server)
      for (let i = 0; i < 4; i++) {
        const served = await request(server, '/v1/pets', { headers: { connection: 'close' } })
        assert.equal(served.status, 200, 'served during the delay, by either worker')
      }
      assert.equal(await exitWithin(server, 15_000), 0, server.output())
      assert.ok(performance.now() - signalled >= delayMs, `the delay was cut short:\n${server.output()}`)
    })
  }

  test('when a second SIGTERM reaches the supervisor during the delay, then it stops waiting: the workers drain and it exits 0 at once', async (t) => {
    const env = { API_KEYS: `ops:${key}`, WORKERS: '2', SHUTDOWN_DELAY_MS: '60000' }
    const server = await startServeProcess(env, temporaryDirectory(t))
    t.after(() => server.child.kill('SIGKILL'))
    await servingWorkers(server, 2)
    server.child.kill('SIGTERM')
    await notReady(server)
    server.child.kill('SIGTERM')
    // Within the default SHUTDOWN_TIMEOUT_MS and its margin, far under the minute's delay.
    assert.equal(await exitWithin(server, 20_000), 0, server.output())
  })
})
