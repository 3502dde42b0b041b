import assert from 'node:assert/strict'
import { once } from 'node:events'
import { connect } from 'node:net'
import { before, describe, test } from 'node:test'
import { call } from './helpers/api-client.ts'
import { within } from './helpers/bounded-wait.ts'
import { checkedRawHttp, checkRawResponse } from './helpers/conformance-fetch.ts'
import { openSocket, rawHttp } from './helpers/raw-http.ts'
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

  test('when an HTTP/1.1 request has no Host header, then 400 bad_request and the connection closes, as for every other refused head', async () => {
    // Not asked to close: the service closes it, and the request behind it is never answered.
    const request = 'GET /v1/pets HTTP/1.1\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'
    const response = await checkedRawHttp(server.origin, request)
    assert.equal(response.status, 400)
    assert.equal(response.headers.connection, 'close')
    assert.equal(errorBody(response.body).code, 'bad_request')
    assert.doesNotMatch(response.body, /HTTP\/1\.1 200/, 'the request behind it was not answered')
  })

  test('when Expect asks for something other than 100-continue, then 417 expectation_failed, carrying the request id as every other answer does', async () => {
    const response = await rawHttp(
      server.origin,
      'GET /v1/pets HTTP/1.1\r\nHost: x\r\nX-Request-Id: expect-1\r\nExpect: teapot\r\n\r\n',
    )
    assert.equal(response.status, 417)
    assert.equal(errorBody(response.body).code, 'expectation_failed')
    assert.equal(response.headers['x-request-id'], 'expect-1')
    assert.equal(response.headers['x-content-type-options'], 'nosniff')
    assert.equal(response.headers['cache-control'], 'no-store')
  })

  test('when Expect asks for 100-continue and something more, then 417 expectation_failed, as for any other expectation', async () => {
    for (const expect of ['100-continue, foo', 'foo 100-continue']) {
      const response = await rawHttp(
        server.origin,
        `GET /v1/pets HTTP/1.1\r\nHost: x\r\nExpect: ${expect}\r\n\r\n`,
      )
      assert.equal(response.status, 417, expect)
      assert.equal(errorBody(response.body).code, 'expectation_failed')
    }
  })

  test('when a GET announces a large body and keeps sending it, then its answer comes with Connection: close and the connection ends, the body never read to its end', async (t) => {
    const { hostname, port } = new URL(server.origin)
    const socket = connect({ host: hostname, port: Number(port) })
    t.after(() => socket.destroy())
    socket.on('error', () => {})
    let answer = ''
    socket.on('data', (chunk: Buffer) => {
      answer += chunk
    })
    const closed = once(socket, 'close')
    socket.write(
      `GET /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${server.key}\r\nContent-Length: 1000000000\r\n\r\n`,
    )
    // Sent until the server ends the connection: REQUEST_TIMEOUT_MS (10 s) would end it otherwise.
    const chunk = Buffer.alloc(64 * 1024, 0x20)
    const feeding = setInterval(() => socket.writable && socket.write(chunk), 20)
    t.after(() => clearInterval(feeding))
    await within(closed, 5000, 'the connection was still open 5 s after the answer')
    assert.match(answer, /^HTTP\/1\.1 200 /)
    assert.match(answer, /\r\nconnection: close\r\n/i)
  })

  test('when the method is CONNECT, then not a dropped connection: on a path of this API 405 with its Allow, on another 404, on a host and port 405 allowing nothing', async () => {
    const cases = [
      ['/v1/pets/1', 405, 'method_not_allowed', 'GET, HEAD'],
      ['/v1/pets?limit=1', 405, 'method_not_allowed', 'GET, HEAD, POST'],
      ['/v1/openapi.json', 405, 'method_not_allowed', 'GET, HEAD'],
      ['/docs/static/swagger-ui.css', 405, 'method_not_allowed', 'GET, HEAD'],
      ['/v1/nope', 404, 'route_not_found', undefined],
      ['example.com:443', 405, 'method_not_allowed', ''],
      // Percent-encoded as the router reads it: a GET to the same target reaches the same operation.
      ['/v1/pet%73', 405, 'method_not_allowed', 'GET, HEAD, POST'],
      ['/v1/pets/%31', 405, 'method_not_allowed', 'GET, HEAD'],
      ['/v1/pets%2F1', 404, 'route_not_found', undefined],
      ['/v1/pets/%E0', 400, 'bad_request', undefined],
    ] as const
    for (const [target, status, code, allow] of cases) {
      const response = await rawHttp(
        server.origin,
        `CONNECT ${target} HTTP/1.1\r\nHost: x\r\nX-Request-Id: connect-1\r\n\r\n`,
      )
      assert.equal(response.status, status, target)
      assert.equal(errorBody(response.body).code, code, target)
      assert.equal(response.headers.allow, allow, target)
      assert.equal(response.headers['x-request-id'], 'connect-1', target)
      if (!target.startsWith('/')) continue
      // A GET to the same target finds the same thing: no path (404), no readable path (400), or a route.
      const get = await rawHttp(
        server.origin,
        `GET ${target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
      )
      assert.equal([400, 404].includes(get.status) ? get.status : 405, status, `GET ${target}: ${get.status}`)
    }
  })

  test('when a client sends CONNECT and resets the connection at once, then the server goes on serving', async () => {
    for (let i = 0; i < 30; i++) {
      const socket = await openSocket(server.origin)
      socket.write('CONNECT /v1/pets HTTP/1.1\r\nHost: x\r\n\r\n')
      socket.resetAndDestroy()
    }
    await new Promise((resolve) => setTimeout(resolve, 200))
    assert.equal((await call(server, 'GET', '/v1/pets')).status, 200)
  })

  test('when a chunked body carries chunk extensions past what the parser keeps, then 413 body_too_large, as Node itself answers', async () => {
    const response = await rawHttp(
      server.origin,
      `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${server.key}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n1;${'a'.repeat(20_000)}\r\n{\r\n0\r\n\r\n`,
    )
    assert.equal(response.status, 413)
    assert.equal(errorBody(response.body).code, 'body_too_large')
  })

  test('when the OpenAPI document is posted to, then 405 with Allow: GET, HEAD', async () => {
    const response = await call(server, 'POST', '/v1/openapi.json', { body: '{}' })
    assert.equal(response.status, 405)
    assert.equal(response.headers.get('allow'), 'GET, HEAD')
  })

  test('when garbage follows a valid create on one connection, then the create is still answered 201', async () => {
    const body = '{"name":"pipelined","categoryId":1}'
    const response = await checkedRawHttp(
      server.origin,
      `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${server.key}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}FOO /x HTTP/1.1\r\n\r\n`,
    )
    assert.equal(response.status, 201, 'the client learns its pet was created')
    const listed = await call(server, 'GET', '/v1/pets')
    assert.ok(listed.json.some((pet: { name: string }) => pet.name === 'pipelined'))
  })

  test('when a request the parser refuses follows, in the same read, one answered already, then its answer never names that earlier request', async () => {
    const socket = await openSocket(server.origin)
    let received = ''
    socket.on('data', (chunk) => {
      received += chunk
    })
    const closed = new Promise((resolve) => socket.on('close', resolve))
    // No key: the create is answered 401 before its body is read; the next request's method is no method.
    socket.write(
      'POST /v1/pets HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}FOO /v1/pets/1 HTTP/1.1\r\nHost: x\r\n\r\n',
    )
    await within(closed, 5000, 'the connection was not closed')
    // Each answer's status line (the second follows the first's body on the wire).
    const statuses = [...received.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((match) => match[1])
    // The second, a line that cannot be told from the bytes the parser held: not valid HTTP, no Allow.
    assert.deepEqual(statuses, ['401', '400'], received)
    const second = received.slice(received.indexOf('HTTP/1.1 400 '))
    assert.doesNotMatch(second, /^allow:/im)
    assert.match(second, /"code":"bad_request"/)
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
    await within(closed, 5000, 'the slow client was not cut off')
    assert.ok(Date.now() - started < 3000, 'cut off within the timeout plus the 1 s check interval')
    assert.match(received, /^HTTP\/1\.1 408 /)
    assert.equal(errorBody(received.slice(received.indexOf('\r\n\r\n') + 4)).code, 'request_timeout')
  })
})

describe('Host and Transfer-Encoding as RFC 9112 reads them', () => {
  let server: TestServer
  const cleanup = suiteCleanup()
  before(async () => {
    server = await startTestServer(cleanup)
  })
  const list = (headers: string) =>
    rawHttp(
      server.origin,
      `GET /v1/pets HTTP/1.1\r\n${headers}Authorization: Bearer ${server.key}\r\nConnection: close\r\n\r\n`,
    )

  test('when Host is sent twice, then 400 bad_request naming the rule, and the connection is closed', async () => {
    const response = await checkRawResponse(
      server.origin,
      'GET',
      '/v1/pets',
      await list('Host: a\r\nHost: b\r\n'),
    )
    assert.equal(response.status, 400)
    assert.equal(response.headers.connection, 'close')
    const body = errorBody(response.body)
    assert.equal(body.code, 'bad_request')
    assert.match(body.message, /Host.*RFC 9112/)
  })

  test('when Host is sent twice under names that differ in case, then 400 bad_request', async () => {
    for (const twice of ['HOST: a\r\nhost: a\r\n', 'Host: a\r\nhOsT: a\r\n']) {
      const response = await list(twice)
      assert.equal(response.status, 400, twice)
      assert.match(errorBody(response.body).message, /Host header is repeated/)
    }
  })

  test('when an invalid Host follows a valid one, and comes again, then each request is judged on its own Host', async () => {
    const statuses = []
    for (const host of ['a.example', 'a b', 'a b', 'a.example', 'a.example/x', 'a.example']) {
      statuses.push((await list(`Host: ${host}\r\n`)).status)
    }
    assert.deepEqual(statuses, [200, 400, 400, 200, 400, 200])
  })

  for (const host of [
    'a b',
    'example.com/v1',
    'user@example.com',
    'example.com:80:80',
    '[::1',
    'é.example',
  ]) {
    test(`when Host is ${JSON.stringify(host)}, then 400 bad_request`, async () => {
      const response = await list(`Host: ${host}\r\n`)
      assert.equal(response.status, 400)
      assert.equal(errorBody(response.body).code, 'bad_request')
    })
  }

  for (const host of ['localhost:8080', '127.0.0.1', '[::1]:8080', 'api.petstore.example', 'x', '']) {
    test(`when Host is ${JSON.stringify(host)}, then the request is served`, async () => {
      assert.equal((await list(`Host: ${host}\r\n`)).status, 200)
    })
  }

  /** A create whose body is sent chunked, under the given Transfer-Encoding header lines. */
  const create = (transferEncoding: string, name: string, version = '1.1') => {
    const pet = JSON.stringify({ name, categoryId: 1 })
    return rawHttp(
      server.origin,
      `POST /v1/pets HTTP/${version}\r\nHost: x\r\nAuthorization: Bearer ${server.key}\r\n` +
        `Content-Type: application/json\r\n${transferEncoding}Connection: close\r\n\r\n` +
        `${pet.length.toString(16)}\r\n${pet}\r\n0\r\n\r\n`,
    )
  }
  const stored = async (name: string) => {
    const { json } = await call(server, 'GET', '/v1/pets?limit=100')
    return json.filter((pet: { name: string }) => pet.name === name).length
  }

  for (const [what, header] of [
    ['gzip, chunked', 'Transfer-Encoding: gzip, chunked\r\n'],
    ['identity, chunked', 'Transfer-Encoding: identity, chunked\r\n'],
    ['gzip and chunked on two lines', 'Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n'],
  ] as const) {
    test(`when Transfer-Encoding is ${what}, then 400 bad_request naming the coding, and no pet is created`, async () => {
      const response = await checkRawResponse(server.origin, 'POST', '/v1/pets', await create(header, what))
      assert.equal(response.status, 400)
      assert.equal(response.headers.connection, 'close')
      const body = errorBody(response.body)
      assert.equal(body.code, 'bad_request')
      assert.match(body.message, /^Transfer-Encoding "(gzip|identity), chunked" .*RFC 9112/)
      assert.equal(await stored(what), 0)
    })
  }

  test('when an HTTP/1.0 request carries Transfer-Encoding, then 400 bad_request and no pet is created', async () => {
    const response = await create('Transfer-Encoding: chunked\r\n', 'HTTP/1.0 chunked', '1.0')
    assert.equal(response.status, 400)
    assert.match(errorBody(response.body).message, /HTTP\/1\.0/)
    assert.equal(await stored('HTTP/1.0 chunked'), 0)
  })

  test('when Transfer-Encoding is chunked alone, then the body is read and the pet created', async () => {
    const response = await checkRawResponse(
      server.origin,
      'POST',
      '/v1/pets',
      await create('Transfer-Encoding: chunked\r\n', 'chunked alone'),
    )
    assert.equal(response.status, 201)
    assert.equal(JSON.parse(response.body).name, 'chunked alone')
    assert.equal(await stored('chunked alone'), 1)
  })
})
