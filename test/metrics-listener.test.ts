import assert from 'node:assert/strict'
import { once } from 'node:events'
import { connect, type Socket } from 'node:net'
import { describe, test } from 'node:test'
import { METRICS_LISTENER_LIMITS, startMetricsServer } from '../src/metrics/metrics-server.ts'
import { waitFor, within } from './helpers/bounded-wait.ts'

const source = { contentType: 'text/plain; version=0.0.4', metrics: async () => 'up 1\n' }

async function listening(t: { after(fn: () => unknown): void }) {
  const server = await startMetricsServer(source, { host: '127.0.0.1', port: 0 })
  t.after(() => {
    server.closeAllConnections()
    server.close()
  })
  const { port } = server.address() as { port: number }
  return port
}

/** A connection; one the listener refuses is reset, which is awaited as its close, not thrown. */
function opened(port: number): Promise<Socket> {
  const socket = connect({ host: '127.0.0.1', port })
  socket.on('error', () => {})
  return once(socket, 'connect').then(() => socket)
}

describe('the metrics listener', () => {
  test('when a client sends half a request head and stops, then the listener closes it after the head timeout, not after minutes', {
    timeout: 30_000,
  }, async (t) => {
    const port = await listening(t)
    const socket = await opened(port)
    t.after(() => socket.destroy())
    socket.write('GET /metrics HTTP/1.1\r\nHost: x\r\n')
    // Read (the 408 Node sends), so that the end, and then the close, are seen.
    socket.resume()
    const started = performance.now()
    // Node checks the head timeout once a second (connectionsCheckingInterval); its default would be 60 s.
    await within(once(socket, 'close'), METRICS_LISTENER_LIMITS.headersTimeoutMs + 10_000, 'still open')
    assert.ok(performance.now() - started >= METRICS_LISTENER_LIMITS.headersTimeoutMs - 100)
  })

  test('when as many clients as it takes hold connections open, then one more is closed unanswered, and a scrape is served once one of them leaves', async (t) => {
    const port = await listening(t)
    const held = await Promise.all(
      Array.from({ length: METRICS_LISTENER_LIMITS.maxConnections }, () => opened(port)),
    )
    t.after(() => {
      for (const socket of held) socket.destroy()
    })
    const extra = await opened(port)
    let answered = ''
    extra.on('data', (chunk) => {
      answered += chunk
    })
    extra.write('GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n')
    // Not events.once: it would reject on the reset's 'error', which comes before the close.
    const closed = new Promise((resolve) => extra.on('close', resolve))
    await within(closed, 5000, 'the connection over the limit was kept')
    assert.equal(answered, '')
    held.pop()?.destroy()
    // Once the listener has seen it go (a refused connection makes fetch throw until then).
    const scraped = await waitFor(
      () =>
        fetch(`http://127.0.0.1:${port}/metrics`).then(
          (response) => response.text(),
          () => undefined,
        ),
      'no scrape served after a connection left',
    )
    assert.equal(scraped, 'up 1\n')
  })
})
