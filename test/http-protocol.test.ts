import assert from 'node:assert/strict'
import { connect } from 'node:net'
import { before, describe, test } from 'node:test'
import { call } from './helpers/api-client.ts'
import { checkRawResponse } from './helpers/conformance-fetch.ts'
import { rawHttp } from './helpers/raw-http.ts'
import { startTestServer, suiteCleanup, type TestServer } from './helpers/test-server.ts'

function errorBody(text: string) {
  const body = JSON.parse(text)
  assert.deepEqual(Object.keys(body).sort(), ['code', 'message', 'status'])
  return body
}

describe('HTTP edge cases answered in the Error body', () => {
  let server: TestServer
  const cleanup = suiteCleanup()
  before(async () => {
    server = await startTestServer(cleanup)
  })

  test('when an HTTP/1.1 request has no Host header, then 400 bad_request', async () => {
    const request = 'GET /v1/pets HTTP/1.1\r\nConnection: close\r\n\r\n'
    const response = await checkRawResponse(
      server.origin,
      'GET',
      '/v1/pets',
      await rawHttp(server.origin, request),
    )
    assert.equal(response.status, 400)
    assert.equal(errorBody(response.body).code, 'bad_request')
  })

  test('when Expect asks for something other than 100-continue, then 417 expectation_failed', async () => {
    const response = await rawHttp(
      server.origin,
      'GET /v1/pets HTTP/1.1\r\nHost: x\r\nExpect: teapot\r\n\r\n',
    )
    assert.equal(response.status, 417)
    assert.equal(errorBody(response.body).code, 'expectation_failed')
  })

  test('when the method is CONNECT, then 405 with Allow instead of a dropped connection', async () => {
    const request = 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n'
    const response = await checkRawResponse(
      server.origin,
      'CONNECT',
      'example.com:443',
      await rawHttp(server.origin, request),
    )
    assert.equal(response.status, 405)
    assert.ok(response.headers.allow)
    assert.equal(errorBody(response.body).code, 'method_not_allowed')
  })

  test('when the OpenAPI document is posted to, then 405 with Allow: GET, HEAD', async () => {
    const response = await call(server, 'POST', '/v1/openapi.json', { body: '{}' })
    assert.equal(response.status, 405)
    assert.equal(response.headers.get('allow'), 'GET, HEAD')
  })

  test('when garbage follows a valid create on one connection, then the create is still answered 201', async () => {
    const body = '{"name":"pipelined","categoryId":1}'
    const response = await checkRawResponse(
      server.origin,
      'POST',
      '/v1/pets',
      await rawHttp(
        server.origin,
        `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${server.key}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}FOO /x HTTP/1.1\r\n\r\n`,
      ),
    )
    assert.equal(response.status, 201, 'the client learns its pet was created')
    const listed = await call(server, 'GET', '/v1/pets')
    assert.ok(listed.json.some((pet: { name: string }) => pet.name === 'pipelined'))
  })
})

describe('slow clients', () => {
  test('when a body arrives slower than REQUEST_TIMEOUT_MS, then 408 request_timeout and the socket is closed', async (t) => {
    const server = await startTestServer(t, { env: { REQUEST_TIMEOUT_MS: '500', HEADERS_TIMEOUT_MS: '400' } })
    const socket = connect({ host: '127.0.0.1', port: Number(new URL(server.origin).port) })
    let received = ''
    socket.on('data', (chunk) => {
      received += chunk
    })
    const closed = new Promise((resolve) => socket.on('close', resolve))
    socket.write(
      `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${server.key}\r\nContent-Type: application/json\r\nContent-Length: 40\r\n\r\n{"na`,
    )
    const started = Date.now()
    await closed
    assert.ok(Date.now() - started < 3000, 'cut off within the timeout plus the 1 s check interval')
    assert.match(received, /^HTTP\/1\.1 408 /)
    assert.equal(errorBody(received.slice(received.indexOf('\r\n\r\n') + 4)).code, 'request_timeout')
  })
})
