import assert from 'node:assert/strict'
import type { AddressInfo } from 'node:net'
import { describe, test } from 'node:test'
import { pino } from 'pino'
import { openMetricsListener } from '../src/cli/metrics-listener.ts'
import { waitUntil } from './helpers/bounded-wait.ts'
import { exchange, openSocket } from './helpers/raw-http.ts'
import { startTestServer } from './helpers/test-server.ts'

const PROBE = 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'
// 45 MB of answers (1.5 MB each), more than both ends' socket buffers on loopback hold, so bytes wait
// unsent; 30 requests, under the 32 a connection may have waiting for their answers.
const BUNDLE = 'GET /docs/static/swagger-ui-bundle.js HTTP/1.1\r\nHost: x\r\n\r\n'
const PIPELINED = BUNDLE.repeat(30)
const CLOSED = 'connection closed: its client took no answer bytes for SEND_TIMEOUT_MS'

describe('a client that stops reading its answers', () => {
  test('when a client pipelines requests and never reads the answers, then its connection is closed once no byte has left for SEND_TIMEOUT_MS, freeing its MAX_CONNECTIONS slot, and the close is logged', {
    timeout: 30_000,
  }, async (t) => {
    const lines: Array<Record<string, unknown>> = []
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) })
    const server = await startTestServer(t, {
      // Kept-alive connections stay: only the deaf one may close.
      env: { SEND_TIMEOUT_MS: '1000', KEEP_ALIVE_TIMEOUT_MS: '60000' },
      app: { logger },
    })
    const connections = () =>
      new Promise<number>((resolve, reject) =>
        server.app.server.getConnections((error, count) => (error ? reject(error) : resolve(count))),
      )
    const deaf = await openSocket(server.origin)
    t.after(() => deaf.destroy())
    deaf.on('error', () => {})
    // Never read: what the server sends piles up in the kernel's buffers, then in its own.
    deaf.pause()
    const started = Date.now()
    deaf.write(PIPELINED)
    const reader = await openSocket(server.origin)
    t.after(() => reader.destroy())
    assert.match(await exchange(reader, PROBE), /^HTTP\/1\.1 200 /, 'a reading client is served meanwhile')
    // What MAX_CONNECTIONS counts: the deaf connection's going frees its slot.
    const open = await connections()
    await waitUntil(
      async () => (await connections()) === open - 1,
      'the connection reading nothing stayed open',
      {
        timeoutMs: 15_000,
      },
    )
    assert.ok(Date.now() - started >= 1000, 'not before SEND_TIMEOUT_MS')
    assert.match(await exchange(reader, PROBE), /^HTTP\/1\.1 200 /, 'the reading client still is')
    const closed = lines.filter((line) => line.msg === CLOSED)
    assert.equal(closed.length, 1, JSON.stringify(lines.filter((line) => line.msg !== 'request')))
    assert.equal(closed[0]?.level, 30)
    assert.equal(closed[0]?.remoteAddress, '127.0.0.1')
    assert.ok(Number(closed[0]?.unsentBytes) > 0, JSON.stringify(closed[0]))
  })

  test('when a connection is idle between requests for longer than SEND_TIMEOUT_MS, then it stays open: nothing waits to be sent', async (t) => {
    const server = await startTestServer(t, { env: { SEND_TIMEOUT_MS: '300' } })
    const socket = await openSocket(server.origin)
    t.after(() => socket.destroy())
    assert.match(await exchange(socket, PROBE), /^HTTP\/1\.1 200 /)
    await new Promise((resolve) => setTimeout(resolve, 1500))
    assert.match(await exchange(socket, PROBE), /^HTTP\/1\.1 200 /)
  })

  test('when a client reads its answers slowly but steadily, longer in all than SEND_TIMEOUT_MS, then it keeps its connection and gets every byte', {
    timeout: 60_000,
  }, async (t) => {
    const server = await startTestServer(t, {
      env: { SEND_TIMEOUT_MS: '2000', KEEP_ALIVE_TIMEOUT_MS: '60000' },
    })
    const slow = await openSocket(server.origin)
    t.after(() => slow.destroy())
    const answers = 12
    let received = 0
    let closedAt: number | undefined
    slow.on('close', () => {
      closedAt ??= received
    })
    // 64 KiB at most every 20 ms: each check sees bytes taken, while 18 MB wait for seconds in all.
    slow.on('data', (chunk: Buffer) => {
      received += chunk.length
      slow.pause()
      setTimeout(() => slow.resume(), 20)
    })
    const started = Date.now()
    slow.write(BUNDLE.repeat(answers))
    const bundle = (await fetch(`${server.origin}/docs/static/swagger-ui-bundle.js`)).headers.get(
      'content-length',
    )
    assert.ok(Number(bundle) > 1_000_000, `an answer of ${bundle} bytes`)
    await waitUntil(
      () => closedAt !== undefined || received >= answers * Number(bundle),
      () => `${received} bytes read`,
      { timeoutMs: 50_000 },
    )
    assert.equal(closedAt, undefined, `cut after ${closedAt} bytes, ${Date.now() - started} ms`)
    assert.ok(Date.now() - started > 3000, 'the reading took longer than SEND_TIMEOUT_MS and a check')
  })

  test('when SEND_TIMEOUT_MS is 0 and a client stops reading, then its connection is kept: no limit', async (t) => {
    const server = await startTestServer(t, { env: { SEND_TIMEOUT_MS: '0', KEEP_ALIVE_TIMEOUT_MS: '60000' } })
    const deaf = await openSocket(server.origin)
    t.after(() => deaf.destroy())
    deaf.on('error', () => {})
    deaf.pause()
    deaf.write(PIPELINED)
    // Three of the checks a limit would be enforced at, a second apart; a paused client would not see
    // the close (the end waits behind the unread bytes), the server's count does.
    await new Promise((resolve) => setTimeout(resolve, 3500))
    const open = await new Promise<number>((resolve, reject) =>
      server.app.server.getConnections((error, count) => (error ? reject(error) : resolve(count))),
    )
    assert.equal(open, 1)
  })

  test('when a scraper pipelines requests to the metrics listener and never reads, then it too is let go, 10 s after its bytes stop', {
    timeout: 60_000,
  }, async (t) => {
    const lines: Array<Record<string, unknown>> = []
    const log = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) })
    // Scrapes of 1.5 MB, as many under the pipelining limit as the API's test sends: more than both ends'
    // socket buffers hold, so bytes wait unsent.
    const source = { contentType: 'text/plain', metrics: async () => '# metric 1\n'.repeat(150_000) }
    const server = await openMetricsListener(source, { host: '127.0.0.1', port: 0 }, log)
    t.after(() => {
      server.closeAllConnections()
      server.close()
    })
    const deaf = await openSocket(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)
    t.after(() => deaf.destroy())
    deaf.on('error', () => {})
    deaf.pause()
    deaf.write('GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n'.repeat(30))
    await waitUntil(() => lines.some((line) => line.msg === CLOSED), 'the deaf scraper was kept', {
      timeoutMs: 40_000,
    })
    assert.equal(lines.find((line) => line.msg === CLOSED)?.remoteAddress, '127.0.0.1')
  })
})
