import assert from 'node:assert/strict'
import { before, describe, test } from 'node:test'
import { assertErrorBody, assertHeadersOfEveryAnswer, checkedRawHttp } from './helpers/conformance-fetch.ts'
import { openSocket, rawHttp } from './helpers/raw-http.ts'
import { startTestServer, suiteCleanup, type TestServer } from './helpers/test-server.ts'

describe('the limits of a request head', () => {
  let server: TestServer
  const cleanup = suiteCleanup()
  before(async () => {
    server = await startTestServer(cleanup)
  })

  test('when the headers are larger than Node accepts, then 431 in the Error body', async () => {
    const response = await rawHttp(
      server.origin,
      `GET /v1/pets HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
    )
    assert.equal(response.status, 431)
    assertErrorBody(response.body, 431, 'headers_too_large')
    assertHeadersOfEveryAnswer(response.headers)
  })

  test('when the request target is longer than 8 KiB, then 414 uri_too_long, before the key is read', async () => {
    const response = await checkedRawHttp(
      server.origin,
      `GET /v1/pets/${'1'.repeat(8192)} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
    )
    assert.equal(response.status, 414)
    assertErrorBody(response.body, 414, 'uri_too_long')
    assertHeadersOfEveryAnswer(response.headers)
  })

  test('when the request target is 8 KiB exactly, then it is routed as any other', async () => {
    const target = `/nope/${'a'.repeat(8192 - '/nope/'.length)}`
    const response = await checkedRawHttp(
      server.origin,
      `GET ${target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
    )
    assert.equal(response.status, 404)
    assertErrorBody(response.body, 404, 'route_not_found')
  })

  test('when the request line alone is over the 16 KiB a head may take, then 414 too, not 431', async () => {
    const response = await rawHttp(
      server.origin,
      `GET /v1/pets?${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`,
    )
    assert.equal(response.status, 414)
    assertErrorBody(response.body, 414, 'uri_too_long')
    assertHeadersOfEveryAnswer(response.headers)
  })

  test('when a long header arrives in pieces and the piece that overflows the head starts like a request line, then 431, not 414', async () => {
    const socket = await openSocket(server.origin)
    let text = ''
    socket.on('data', (chunk: Buffer) => {
      text += chunk
    })
    socket.write(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Data: ${'a'.repeat(9000)}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
    socket.write(`foo ${'b'.repeat(9000)}\r\n\r\n`)
    await new Promise((resolve) => socket.once('close', resolve))
    assert.match(text, /^HTTP\/1\.1 431 /)
  })
})
