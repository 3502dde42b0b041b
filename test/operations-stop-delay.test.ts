import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { generateApiKey } from '../src/auth/api-key.ts'
import { waitUntil } from './helpers/bounded-wait.ts'
import { temporaryDirectory } from './helpers/cleanup.ts'
import { exitWithin, requesterFor, startServeProcess } from './helpers/cli-process.ts'

const key = generateApiKey()
const env = { API_KEYS: `ops:${key}` }
const request = requesterFor(key)

describe('a stop announced first', () => {
  test('when SHUTDOWN_DELAY_MS is set and SIGTERM arrives, then /readyz answers 503 at once while new requests are still served, and the drain and exit 0 follow the delay', async (t) => {
    const server = await startServeProcess({ ...env, SHUTDOWN_DELAY_MS: '1500' }, temporaryDirectory(t))
    t.after(() => server.child.kill('SIGKILL'))
    const signalled = performance.now()
    server.child.kill('SIGTERM')
    await waitUntil(
      async () => (await fetch(`${server.origin}/readyz`)).status === 503,
      'not ready at once',
      {
        timeoutMs: 1000,
      },
    )
    const served = await request(server, '/v1/pets', { headers: { connection: 'close' } })
    assert.equal(served.status, 200, 'served as before the signal')
    assert.equal(await exitWithin(server), 0)
    assert.ok(performance.now() - signalled >= 1500, 'the listener stayed open for the delay')
  })

  test('when a second SIGTERM arrives during SHUTDOWN_DELAY_MS, then it stops waiting: the drain and exit 0 follow at once', async (t) => {
    const server = await startServeProcess({ ...env, SHUTDOWN_DELAY_MS: '60000' }, temporaryDirectory(t))
    t.after(() => server.child.kill('SIGKILL'))
    server.child.kill('SIGTERM')
    await waitUntil(
      async () =>
        (await fetch(`${server.origin}/readyz`, { headers: { connection: 'close' } })).status === 503,
      'not ready',
      { timeoutMs: 2000 },
    )
    server.child.kill('SIGTERM')
    // Within the default SHUTDOWN_TIMEOUT_MS and its margin, far under the minute's delay.
    assert.equal(await exitWithin(server, 20_000), 0, server.output())
  })
})
