import assert from 'node:assert/strict'
import { before, describe, test } from 'node:test'
import { within } from './helpers/bounded-wait.ts'
import { openSocket } from './helpers/raw-http.ts'
import { startTestServer, suiteCleanup, type TestServer } from './helpers/test-server.ts'

describe('Expect: 100-continue', () => {
  let server: TestServer
  const cleanup = suiteCleanup()
  before(async () => {
    server = await startTestServer(cleanup)
  })
  const body = '{"name":"invited","categoryId":1}'
  const head = (key: string, contentType = 'application/json') =>
    `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: ${contentType}\r\n` +
    `Content-Length: ${body.length}\r\nExpect: 100-continue\r\n\r\n`

  /** Sends the head alone, and the body only once the server has said 100 Continue. */
  async function expectContinue(key: string, contentType?: string): Promise<string> {
    const socket = await openSocket(server.origin)
    cleanup.after(() => socket.destroy())
    let received = ''
    const ended = new Promise<void>((resolve) => socket.on('close', () => resolve()))
    socket.on('data', (chunk) => {
      const before = received
      received += chunk
      if (!before.includes('100 Continue') && received.startsWith('HTTP/1.1 100 Continue\r\n\r\n')) {
        socket.write(body)
      }
      if (/^HTTP\/1\.1 [2-5]\d\d /m.test(received.replace(/^HTTP\/1\.1 100 Continue\r\n\r\n/, ''))) {
        const final = received.replace(/^HTTP\/1\.1 100 Continue\r\n\r\n/, '')
        const end = final.indexOf('\r\n\r\n')
        const length = Number(/\r\ncontent-length: (\d+)/i.exec(final)?.[1] ?? -1)
        if (end !== -1 && final.length - end - 4 >= length) socket.end()
      }
    })
    socket.write(head(key, contentType))
    await within(ended, 5000, () => `the exchange did not end; received: ${JSON.stringify(received)}`)
    return received
  }

  test('when the key is wrong, then 401 and the client is never invited to send its body', async () => {
    const received = await expectContinue('psk_wrong')
    assert.doesNotMatch(received, /100 Continue/)
    assert.match(received, /^HTTP\/1\.1 401 /)
    assert.match(received, /"code":"unauthorized"/)
  })

  test('when the key is good but the body is not JSON, then 415 without an invitation to send it', async () => {
    const received = await expectContinue(server.key, 'text/plain')
    assert.doesNotMatch(received, /100 Continue/)
    assert.match(received, /^HTTP\/1\.1 415 /)
  })

  test('when the key is good but the announced body is over the limit, then 413 without an invitation, and the connection says it closes (the body it was never invited to send is not there to read)', async () => {
    const socket = await openSocket(server.origin)
    cleanup.after(() => socket.destroy())
    let received = ''
    socket.on('data', (chunk) => {
      received += chunk
    })
    const ended = new Promise<void>((resolve) => socket.on('close', () => resolve()))
    socket.write(
      `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${server.key}\r\n` +
        'Content-Type: application/json\r\nContent-Length: 5000\r\nExpect: 100-continue\r\n\r\n',
    )
    await within(ended, 5000, () => `the connection was kept; received: ${JSON.stringify(received)}`)
    assert.match(received, /^HTTP\/1\.1 413 /)
    assert.match(received, /\r\nconnection: close\r\n/i)
  })

  test('when the key is good, then 100 Continue, and after the body 201', async () => {
    const received = await expectContinue(server.key)
    assert.match(received, /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 201 /)
    assert.match(received, /"name":"invited"/)
  })
})
