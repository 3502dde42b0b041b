import assert from 'node:assert/strict'
import { METHODS } from 'node:http'
import { before, describe, test } from 'node:test'
import { HEADERS_OF_EVERY_ANSWER } from '../src/http/raw-answers.ts'
import { call } from './helpers/api-client.ts'
import { assertErrorBody, assertHeadersOfEveryAnswer, checkedRawHttp } from './helpers/conformance-fetch.ts'
import { rawHttp } from './helpers/raw-http.ts'
import { startTestServer, suiteCleanup, type TestServer } from './helpers/test-server.ts'

describe('errors raised before any handler', () => {
  let server: TestServer
  const cleanup = suiteCleanup()
  before(async () => {
    server = await startTestServer(cleanup)
  })

  for (const path of ['/', '/nope', '/v1', '/v2/pets', '/v1/pets/1/owner', '/V1/PETS']) {
    test(`when ${path} is requested, then 404 route_not_found`, async () => {
      const response = await call(server, 'GET', path)
      assert.equal(response.status, 404)
      assertErrorBody(response.text, 404, 'route_not_found')
    })
  }

  test('when a long path names no operation, then the 404 names its first 200 characters and its query not at all', async () => {
    const path = `/v1/${'a'.repeat(4000)}`
    const response = await call(server, 'GET', `${path}?q=${'b'.repeat(100)}`)
    assert.equal(response.status, 404)
    assert.equal(response.json.message, `no operation at GET ${path.slice(0, 200)}`)
    const short = await call(server, 'GET', '/nope?q=b')
    assert.equal(short.json.message, 'no operation at GET /nope')
  })

  for (const [method, path, allow] of [
    ['DELETE', '/v1/pets', 'GET, HEAD, POST'],
    ['PUT', '/v1/pets', 'GET, HEAD, POST'],
    ['PATCH', '/v1/pets/1', 'GET, HEAD'],
    ['DELETE', '/v1/pets/1', 'GET, HEAD'],
    ['POST', '/v1/pets/1', 'GET, HEAD'],
    ['OPTIONS', '/v1/pets', 'GET, HEAD, POST'],
  ] as const) {
    test(`when ${method} ${path} is requested, then 405 with Allow: ${allow}, before the body is read`, async () => {
      const response = await call(server, method, path, {
        body: 'not json',
        headers: { 'content-type': 'text/plain' },
      })
      assert.equal(response.status, 405)
      assert.equal(response.headers.get('allow'), allow)
      assertErrorBody(response.text, 405, 'method_not_allowed')
    })
  }

  // Every method Node's parser takes (CONNECT is answered apart, see http-protocol.test.ts), with a body.
  const methods = METHODS.filter((method) => method !== 'CONNECT')
  for (const [path, allow] of [
    ['/v1/pets', 'GET, HEAD, POST'],
    ['/v1/pets/1', 'GET, HEAD'],
  ] as const) {
    test(`when any other method Node parses reaches ${path}, then 405 with Allow: ${allow}`, async () => {
      const answers: string[] = []
      for (const method of methods.filter((method) => !allow.split(', ').includes(method))) {
        const response = await checkedRawHttp(
          server.origin,
          `${method} ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: 8\r\nConnection: close\r\n\r\nnot json`,
        )
        answers.push(
          `${method} ${response.status} ${response.headers.allow} ${JSON.parse(response.body).code}`,
        )
      }
      assert.deepEqual(
        answers.filter((answer) => !answer.endsWith(` 405 ${allow} method_not_allowed`)),
        [],
      )
    })
  }

  test("when a method Node's parser does not know (an extension, a lowercase get) is sent, then 405 with the path's Allow, or 404 where no operation is, as for a method it knows", async () => {
    const answers: string[] = []
    for (const [method, path] of [
      ['FOO', '/v1/pets'],
      ['get', '/v1/pets'],
      ['PURGE', '/v1/pets/1'],
      ['FOO', '/nowhere'],
    ] as const) {
      const response = await rawHttp(
        server.origin,
        `${method} ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
      )
      answers.push(
        `${method} ${path} ${response.status} ${response.headers.allow} ${JSON.parse(response.body).code}`,
      )
    }
    assert.deepEqual(answers, [
      'FOO /v1/pets 405 GET, HEAD, POST method_not_allowed',
      'get /v1/pets 405 GET, HEAD, POST method_not_allowed',
      'PURGE /v1/pets/1 405 GET, HEAD method_not_allowed',
      'FOO /nowhere 404 undefined route_not_found',
    ])
  })

  test('when a method with content (QUERY) names no operation and no Content-Type, then 404 route_not_found', async () => {
    for (const path of ['/nope', '/v1/nope']) {
      const response = await checkedRawHttp(
        server.origin,
        `QUERY ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
      )
      assert.equal(response.status, 404, path)
      assertErrorBody(response.body, 404, 'route_not_found')
    }
  })

  test('when the collection is asked for with a trailing slash, then 404 route_not_found for every method, as for a pet with one', async () => {
    for (const [method, path] of [
      ['GET', '/v1/pets/'],
      ['GET', '/v1/pets/?limit=5'],
      ['HEAD', '/v1/pets/'],
      ['POST', '/v1/pets/'],
      ['DELETE', '/v1/pets/'],
      ['GET', '/v1/pets/1/'],
    ] as const) {
      const response = await call(server, method, path, {
        ...(method === 'POST'
          ? { body: '{"name":"Rex","categoryId":1}', headers: { 'content-type': 'application/json' } }
          : {}),
      })
      assert.equal(response.status, 404, `${method} ${path}`)
      if (method !== 'HEAD') assertErrorBody(response.text, 404, 'route_not_found')
      assert.equal(response.headers.get('deprecation'), null, `${method} ${path}: not a getPet call`)
      assert.equal(response.headers.get('allow'), null, `${method} ${path}`)
    }
  })

  test("when the framework makes an answer, then it carries each of the raw answers' common headers", async () => {
    // The lifecycle sets them one by one, not through the framework's headers(): each must still arrive.
    const answers = [
      await call(server, 'GET', '/nope'),
      await call(server, 'GET', '/v1/pets?limit=0'),
      await call(server, 'GET', '/v1/pets', { key: false }),
    ]
    assert.deepEqual(
      answers.map((response) => response.status),
      [404, 400, 401],
    )
    for (const response of answers) {
      for (const [name, value] of Object.entries(HEADERS_OF_EVERY_ANSWER)) {
        assert.equal(response.headers.get(name), value, `${response.status}: ${name}`)
      }
    }
  })

  test('when the URL has a malformed percent-encoding, then 400 bad_request', async () => {
    const response = await call(server, 'GET', '/v1/pets/%E0%A4%A')
    assert.equal(response.status, 400)
    assertErrorBody(response.text, 400, 'bad_request')
    // Refused by the router before any hook: still the headers every answer carries.
    assert.match(response.headers.get('x-request-id') ?? '', /^[\w.:-]{1,128}$/)
    assert.equal(response.headers.get('x-content-type-options'), 'nosniff')
    assert.equal(response.headers.get('cache-control'), 'no-store')
  })

  for (const path of [
    '/v1/pets?%zz=1',
    '/v1/pets?status=%E0%A4',
    '/v1/pets?limit=5%',
    '/v1/pets/1?x=%G1',
    '/v1/pets?status=%ff',
    '/v1/pets/%ff',
  ]) {
    test(`when the URL's path or query string has a malformed percent-encoding, or one that is not UTF-8 (${path}), then 400 bad_request naming both, with a key or without`, async () => {
      for (const key of [undefined, false] as const) {
        const response = await call(server, 'GET', path, { key })
        assert.equal(response.status, 400, `key ${key}`)
        assertErrorBody(response.text, 400, 'bad_request')
        assert.equal(
          response.json.message,
          'the URL has a malformed percent-encoding: a % not followed by two hex digits, or bytes that are not UTF-8',
        )
      }
    })
  }

  test('when the query string holds percent-encoded text, then it is read decoded', async () => {
    const response = await call(server, 'GET', '/v1/pets?st%61tus=%61vailable&limit=%32')
    assert.equal(response.status, 200, response.text)
  })

  test('when Content-Length is not a number, then 400 in the Error body', async () => {
    const response = await checkedRawHttp(
      server.origin,
      'POST /v1/pets HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\nContent-Type: application/json\r\n\r\n{}',
    )
    assert.equal(response.status, 400)
    assert.match(response.headers['content-type'] ?? '', /^application\/json/)
    assertErrorBody(response.body, 400, 'bad_request')
    assertHeadersOfEveryAnswer(response.headers)
  })

  test('when the method is not HTTP at all (no token: a character a method cannot hold), then 400 in the Error body', async () => {
    const request = 'G@T /v1/pets HTTP/1.1\r\nHost: x\r\n\r\n'
    const response = await checkedRawHttp(server.origin, request)
    assert.equal(response.status, 400)
    assertErrorBody(response.body, 400, 'bad_request')
    assertHeadersOfEveryAnswer(response.headers)
  })

  for (const [rule, head, said] of [
    ['two Content-Length headers', 'Content-Length: 2\r\nContent-Length: 3', /Duplicate Content-Length/],
    [
      'Content-Length with Transfer-Encoding',
      'Content-Length: 3\r\nTransfer-Encoding: chunked',
      /Transfer-Encoding can't be present with Content-Length/,
    ],
    ['a Content-Length with a sign', 'Content-Length: +2', /Invalid character in Content-Length/],
    ['a header folded over two lines', 'X-Note: a\r\n b', /Unexpected whitespace after header value/],
    ['a NUL in a header value', 'X-Note: a\0b', /Invalid header value char/],
  ] as const) {
    test(`when a request has ${rule}, then 400 in the Error body, naming what the parser refused`, async () => {
      const response = await rawHttp(server.origin, `POST /v1/pets HTTP/1.1\r\nHost: x\r\n${head}\r\n\r\n{}`)
      assert.equal(response.status, 400)
      assertErrorBody(response.body, 400, 'bad_request')
      const { message } = JSON.parse(response.body) as { message: string }
      assert.match(message, /^the request is not valid HTTP\/1\.1: /)
      assert.match(message, said)
    })
  }

  test('when HEAD asks for a path with no operation, then its Content-Length is the one GET would have (RFC 9110 §8.6)', async () => {
    const ask = (method: string) =>
      rawHttp(server.origin, `${method} /no/such/path HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`)
    const [head, get] = [await ask('HEAD'), await ask('GET')]
    assert.deepEqual([head.status, get.status], [404, 404])
    assert.equal(head.headers['content-length'], get.headers['content-length'])
    assert.equal(head.body, '')
  })

  test('when the request target is "*", then OPTIONS is 405 as anywhere else here (Allow: none: "*" names no resource), and any other method 400 (RFC 9112 §3.2.4)', async () => {
    const ask = (method: string) =>
      checkedRawHttp(server.origin, `${method} * HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`)
    const options = await ask('OPTIONS')
    assert.equal(options.status, 405)
    assertErrorBody(options.body, 405, 'method_not_allowed')
    assert.equal(options.headers.allow, '')
    for (const method of ['GET', 'HEAD', 'POST']) {
      const response = await ask(method)
      assert.equal(response.status, 400, method)
      if (method !== 'HEAD') assertErrorBody(response.body, 400, 'bad_request')
    }
  })

  test('when an absolute-form target does not parse as a URL (a port out of range), then 400 says so, not a percent-encoding', async () => {
    const response = await rawHttp(
      server.origin,
      'GET http://x:99999/v1/pets/1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
    )
    assert.equal(response.status, 400)
    assertErrorBody(response.body, 400, 'bad_request')
    assert.match(response.body, /not a valid absolute URL/)
  })

  test('when the declared body is over the limit, then 413 without reading it', async () => {
    const response = await checkedRawHttp(
      server.origin,
      `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${server.key}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\nConnection: close\r\n\r\n{`,
    )
    assert.equal(response.status, 413)
    assertErrorBody(response.body, 413, 'body_too_large')
  })

  test('when a chunked body grows over the limit, then 413', async () => {
    const chunk = 'a'.repeat(3000)
    const size = chunk.length.toString(16)
    const response = await checkedRawHttp(
      server.origin,
      `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${server.key}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n${size}\r\n${chunk}\r\n${size}\r\n${chunk}\r\n0\r\n\r\n`,
    )
    assert.equal(response.status, 413)
    assertErrorBody(response.body, 413, 'body_too_large')
  })
})
