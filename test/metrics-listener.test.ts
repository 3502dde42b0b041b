import assert from 'node:assert/strict'
import { once } from 'node:events'
import { connect, type Socket } from 'node:net'
import { describe, test } from 'node:test'
import { openMetricsListener } from '../src/cli/metrics-listener.ts'
import { PIPELINED_MAX } from '../src/http/pipelined-requests.ts'
import { METRICS_LISTENER_LIMITS } from '../src/metrics/metrics-server.ts'
import { waitFor, within } from './helpers/bounded-wait.ts'
import { mostHeldAfter } from './helpers/held-memory.ts'

const source = { contentType: 'text/plain; version=0.0.4', metrics: async () => 'up 1\n' }

/** A connection; one the listener refuses is reset, which is awaited as its close, not thrown. */
function opened(port: number): Promise<Socket> {
  const socket = connect({ host: '127.0.0.1', port })
  socket.on('error', () => {})
  return once(socket, 'connect').then(() => socket)
}

describe('the metrics listener', () => {
  test('when /metrics is asked with HEAD, then 200 with its content type and no body; with a query, as without; with another method, 405 with Allow; another path, 404', async (t) => {
    const port = await opening(t)
    const head = await fetch(`http://127.0.0.1:${port}/metrics`, { method: 'HEAD' })
    assert.deepEqual(
      [head.status, head.headers.get('content-type'), await head.text()],
      [200, source.contentType, ''],
    )
    for (const method of ['POST', 'DELETE']) {
      const refused = await fetch(`http://127.0.0.1:${port}/metrics`, { method })
      assert.deepEqual([refused.status, refused.headers.get('allow')], [405, 'GET, HEAD'], method)
      await refused.text()
    }
    // A query (a federating scraper's `match[]`) names the same path.
    const queried = await fetch(`http://127.0.0.1:${port}/metrics?match[]=up`)
    assert.deepEqual([queried.status, await queried.text()], [200, 'up 1\n'])
    const elsewhere = await fetch(`http://127.0.0.1:${port}/other`)
    assert.equal(elsewhere.status, 404)
    await elsewhere.text()
  })

  test("when collecting the metrics fails, then the scrape gets 500 without the error's words, and the error is logged with what it failed", async (t) => {
    const logged: unknown[][] = []
    const failing = { ...source, metrics: () => Promise.reject(new Error('metric petstore_x has two types')) }
    const port = await opening(t, failing, {
      info: () => {},
      error: (...args: unknown[]) => logged.push(args),
    })
    const scrape = await fetch(`http://127.0.0.1:${port}/metrics`)
    assert.deepEqual([scrape.status, await scrape.text()], [500, 'metrics unavailable\n'])
    assert.equal(logged.length, 1)
    const [fields, message] = logged[0] as [{ err?: Error }, string]
    assert.equal(fields.err?.message, 'metric petstore_x has two types')
    assert.equal(message, 'a scrape got 500: collecting the metrics failed')
  })

  test("when the listener is on loopback and a request names another host (a web page's DNS rebinding), then 421 and no metrics; loopback names get them, as does a request naming none (HTTP/1.0), and a listener on every address answers any name (a scrape by service name)", async (t) => {
    /** What the listener answers to `head`, sent whole on a connection of its own. */
    const answerTo = async (port: number, head: string) => {
      const socket = await opened(port)
      socket.end(head)
      let text = ''
      for await (const chunk of socket) text += chunk
      return text
    }
    const scrape = (port: number, host: string) =>
      answerTo(port, `GET /metrics HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`)
    const port = await opening(t)
    for (const host of [
      'rebind.attacker.example',
      `rebind.attacker.example:${port}`,
      '10.0.0.7',
      'localhost.example',
    ]) {
      const answer = await scrape(port, host)
      assert.match(answer, /^HTTP\/1\.1 421 /, host)
      assert.doesNotMatch(answer, /up 1/, host)
    }
    // Node keeps the first of two Host headers: the second could name any host.
    const answer = await answerTo(
      port,
      'GET /metrics HTTP/1.1\r\nHost: localhost\r\nHost: rebind.attacker.example\r\n\r\n',
    )
    assert.match(answer, /^HTTP\/1\.1 400 [\s\S]*the Host header is repeated/)
    assert.doesNotMatch(answer, /up 1/)
    for (const host of [
      `127.0.0.1:${port}`,
      `localhost:${port}`,
      'LOCALHOST',
      `[::1]:${port}`,
      '127.9.9.9',
      'a.localhost',
    ]) {
      assert.match(await scrape(port, host), /^HTTP\/1\.1 200 [\s\S]*up 1\n/, host)
    }
    // No Host at all (HTTP/1.0: a shell's probe): a browser always sends one, so no page is behind it.
    assert.match(await answerTo(port, 'GET /metrics HTTP/1.0\r\n\r\n'), /^HTTP\/1\.1 200 [\s\S]*up 1\n/)
    const everywhere = await openMetricsListener(source, { host: '0.0.0.0', port: 0 }, QUIET)
    t.after(() => {
      everywhere.closeAllConnections()
      everywhere.close()
    })
    const open = (everywhere.address() as { port: number }).port
    assert.match(await scrape(open, 'petstore:9464'), /^HTTP\/1\.1 200 /)
  })

  test('when a client sends half a request head and stops, then the listener closes it after the head timeout, not after minutes', {
    timeout: 30_000,
  }, async (t) => {
    const port = await opening(t)
    const socket = await opened(port)
    t.after(() => socket.destroy())
    socket.write('GET /metrics HTTP/1.1\r\nHost: localhost\r\n')
    // Read (the 408 Node sends), so that the end, and then the close, are seen.
    socket.resume()
    const started = performance.now()
    // Node checks the head timeout once a second (connectionsCheckingInterval); its default would be 60 s.
    await within(once(socket, 'close'), METRICS_LISTENER_LIMITS.headersTimeoutMs + 10_000, 'still open')
    assert.ok(performance.now() - started >= METRICS_LISTENER_LIMITS.headersTimeoutMs - 100)
  })

  test('when as many clients as it takes hold connections open, then one more is closed unanswered, and a scrape is served once one of them leaves', async (t) => {
    const port = await opening(t)
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
    extra.write('GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n')
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

  test(`when a scraper pipelines more scrapes than wait for their answers at once, then ${PIPELINED_MAX} are answered, the next is 503 with Retry-After and Connection: close, and the connection ends`, async (t) => {
    const port = await opening(t, source)
    const socket = await opened(port)
    t.after(() => socket.destroy())
    let text = ''
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1')
    })
    socket.write(SCRAPE.repeat(PIPELINED_MAX + 8))
    await within(once(socket, 'close'), 10_000, 'the connection was kept')
    const statuses = [...text.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((match) => Number(match[1]))
    assert.deepEqual(statuses, [...Array(PIPELINED_MAX).fill(200), 503])
    const refusal = text.slice(text.indexOf('HTTP/1.1 503 '))
    assert.match(refusal, /\r\nretry-after: 1\r\n/i)
    assert.match(refusal, /\r\nconnection: close\r\n/i)
  })

  test('when six connections pipeline 3,000 scrapes each and read nothing, then the answers waiting hold tens of megabytes, not hundreds', {
    timeout: 30_000,
  }, async (t) => {
    // A registry's text is made anew for every scrape: about 13 KB for a service's metrics.
    const port = await opening(t, { ...source, metrics: async () => '# metric 1\n'.repeat(1200) })
    const deaf = await Promise.all(Array.from({ length: 6 }, () => opened(port)))
    t.after(() => {
      for (const socket of deaf) socket.destroy()
    })
    const most = await mostHeldAfter(() => {
      for (const socket of deaf) {
        socket.pause()
        socket.write(SCRAPE.repeat(3000))
      }
    })
    // Garbage not yet collected counts too: 58 MB measured, 265 MB with every scrape computed and held.
    assert.ok(most < 128 * MB, `${(most / MB).toFixed(0)} MB held for six connections`)
  })
})

const SCRAPE = 'GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n'
const QUIET = { info: () => {}, error: () => {} }
const MB = 1024 * 1024

/** The listener as the service opens it (its checks on connections included), on a free port. */
async function opening(
  t: { after(fn: () => unknown): void },
  from = source,
  log: Parameters<typeof openMetricsListener>[2] = QUIET,
): Promise<number> {
  const server = await openMetricsListener(from, { host: '127.0.0.1', port: 0 }, log)
  t.after(() => {
    server.closeAllConnections()
    server.close()
  })
  return (server.address() as { port: number }).port
}
