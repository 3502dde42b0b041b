import assert from 'node:assert/strict'
import { once } from 'node:events'
import { connect, type Socket } from 'node:net'
import { describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { call } from './helpers/api-client.ts'
import { waitUntil, within } from './helpers/bounded-wait.ts'
import { exchange, openSocket } from './helpers/raw-http.ts'
import { startTestServer } from './helpers/test-server.ts'

describe('resource defences', () => {
  test('when a client sends its headers too slowly, then it is cut off while other clients are served', async (t) => {
    const server = await startTestServer(t, { env: { HEADERS_TIMEOUT_MS: '500', REQUEST_TIMEOUT_MS: '600' } })
    const slow = connect({ host: '127.0.0.1', port: Number(new URL(server.origin).port) })
    let received = ''
    slow.on('data', (chunk) => {
      received += chunk
    })
    const closed = new Promise((resolve) => slow.on('close', resolve))
    slow.write('GET /v1/pets HTTP/1.1\r\nHost: x\r\n')
    const dripping = setInterval(() => slow.writable && slow.write('X-Slow: 1\r\n'), 100)
    t.after(() => clearInterval(dripping))
    const started = Date.now()
    for (let i = 0; i < 5; i++) {
      assert.equal((await call(server, 'GET', '/v1/pets')).status, 200, 'a normal client is served meanwhile')
      await sleep(50)
    }
    await within(closed, 5000, 'the slow client was not cut off')
    clearInterval(dripping)
    assert.ok(Date.now() - started < 3000)
    assert.match(received, /^HTTP\/1\.1 408 /)
  })

  // A timeout of its own: without the request timeout, the slow client would be waited for forever.
  test('when a client sends its body too slowly, then it is cut off with 408 while other clients are served meanwhile', {
    timeout: 10_000,
  }, async (t) => {
    const server = await startTestServer(t, { env: { HEADERS_TIMEOUT_MS: '500', REQUEST_TIMEOUT_MS: '600' } })
    const slow = await openSocket(server.origin)
    let received = ''
    slow.on('data', (chunk) => {
      received += chunk
    })
    const closed = once(slow, 'close')
    slow.write(
      `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${server.key}\r\n` +
        'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{',
    )
    const dripping = setInterval(() => slow.writable && slow.write(' '), 100)
    t.after(() => clearInterval(dripping))
    const started = Date.now()
    // Normal clients in parallel with the slow one, several at a time, until it is cut off.
    let cutOff = false
    const normal = async (i: number) => {
      for (let n = 0; !cutOff; n++) {
        const response = await call(server, 'POST', '/v1/pets', {
          body: { name: `n${i}-${n}`, categoryId: 1 },
        })
        assert.equal(response.status, 201, 'a normal client is served meanwhile')
        await sleep(50)
      }
    }
    const clients = [0, 1, 2].map(normal)
    // Stopped even when the wait below fails, or the normal clients would run on.
    t.after(() => {
      cutOff = true
    })
    await within(closed, 5000, 'the slow client was not cut off')
    cutOff = true
    clearInterval(dripping)
    await Promise.all(clients)
    assert.ok(Date.now() - started < 3000)
    assert.match(received, /^HTTP\/1\.1 408 /)
    assert.match(received, /"code":"request_timeout"/)
    const { json } = await call(server, 'GET', '/v1/pets?limit=100')
    assert.ok(json.length >= 9, 'the normal clients wrote throughout')
  })

  test('when MAX_CONNECTIONS sockets are open, then one more is closed unanswered while the others are served', {
    timeout: 10_000,
  }, async (t) => {
    const server = await startTestServer(t, { env: { MAX_CONNECTIONS: '3' } })
    const probe = 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'
    const open = await Promise.all([0, 1, 2].map(() => openSocket(server.origin)))
    t.after(() => {
      for (const socket of open) socket.destroy()
    })
    for (const socket of open) assert.match(await exchange(socket, probe), /^HTTP\/1\.1 200 /)

    const extra = connect({ host: '127.0.0.1', port: Number(new URL(server.origin).port) })
    let answered = ''
    extra.on('data', (chunk) => {
      answered += chunk
    })
    extra.on('error', () => {}) // a reset is as good a refusal as a close
    extra.on('connect', () => extra.write(probe))
    await within(once(extra, 'close'), 5000, 'the socket over the cap was not closed')
    assert.equal(answered, '', 'the socket over the cap gets no answer')

    for (const socket of open) assert.match(await exchange(socket, probe), /^HTTP\/1\.1 200 /, 'still served')
    // The cap counts open sockets: with one closed, a new one is served.
    const [first] = open.splice(0, 1)
    first?.destroy()
    await within(once(first as Socket, 'close'), 5000, 'the destroyed socket did not close')
    const connections = () =>
      new Promise<number>((resolve, reject) =>
        server.app.server.getConnections((error, count) => (error ? reject(error) : resolve(count))),
      )
    // The server sees the close a moment later.
    await waitUntil(async () => (await connections()) < 3, 'the server still counts the closed socket')
    const later = await openSocket(server.origin)
    open.push(later)
    assert.match(await exchange(later, probe), /^HTTP\/1\.1 200 /)
  })
})
