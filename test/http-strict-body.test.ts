import assert from 'node:assert/strict'
import { before, describe, test } from 'node:test'
import { call } from './helpers/api-client.ts'
import { checkedRawHttp } from './helpers/conformance-fetch.ts'
import { engineSuiteOptions, storeEngines } from './helpers/store-engines.ts'
import { startTestServer, suiteCleanup, type TestServer } from './helpers/test-server.ts'

interface BadBody {
  name: string
  body: string | Uint8Array
  headers?: Record<string, string>
  status: number
  code: string
  /** What the message must say: the offending field and its rule. */
  message: RegExp
}

const INT64 = /"categoryId" must be an integer from -9223372036854775808 to 9223372036854775807/
const NAME_LENGTH = /"name" must be a string of 1 to 100 characters/
const NAME_VISIBLE = /"name" must have a visible character and no control characters or unpaired surrogates/
const pet = (fields: string) => `{"name":"a","categoryId":1${fields}}`

// biome-ignore format: one case per line reads as a table
const badBodies: BadBody[] = [
  { name: 'categoryId as a string', body: '{"name":"a","categoryId":"5"}', status: 400, code: 'invalid_body', message: INT64 },
  { name: 'categoryId with a fraction', body: '{"name":"a","categoryId":1.5}', status: 400, code: 'invalid_body', message: INT64 },
  { name: 'categoryId written 1.0', body: '{"name":"a","categoryId":1.0}', status: 400, code: 'invalid_body', message: INT64 },
  { name: 'categoryId with an exponent', body: '{"name":"a","categoryId":1e3}', status: 400, code: 'invalid_body', message: INT64 },
  { name: 'categoryId -0', body: '{"name":"a","categoryId":-0}', status: 400, code: 'invalid_body', message: INT64 },
  { name: 'categoryId above int64', body: '{"name":"a","categoryId":9223372036854775808}', status: 400, code: 'invalid_body', message: INT64 },
  { name: 'categoryId below int64', body: '{"name":"a","categoryId":-9223372036854775809}', status: 400, code: 'invalid_body', message: INT64 },
  { name: 'categoryId far out of range', body: '{"name":"a","categoryId":1e400}', status: 400, code: 'invalid_body', message: INT64 },
  { name: 'categoryId null', body: '{"name":"a","categoryId":null}', status: 400, code: 'invalid_body', message: INT64 },
  { name: 'categoryId boolean', body: '{"name":"a","categoryId":true}', status: 400, code: 'invalid_body', message: INT64 },
  { name: 'name as a number', body: '{"name":123,"categoryId":1}', status: 400, code: 'invalid_body', message: NAME_LENGTH },
  { name: 'empty name', body: '{"name":"","categoryId":1}', status: 400, code: 'invalid_body', message: NAME_LENGTH },
  { name: 'name of 101 characters', body: `{"name":"${'x'.repeat(101)}","categoryId":1}`, status: 400, code: 'invalid_body', message: NAME_LENGTH },
  { name: 'blank name', body: '{"name":"  \\t ","categoryId":1}', status: 400, code: 'invalid_body', message: NAME_VISIBLE },
  { name: 'name of zero-width spaces', body: '{"name":"\\u200b\\u200b","categoryId":1}', status: 400, code: 'invalid_body', message: NAME_VISIBLE },
  { name: 'name of Braille blanks (a symbol that draws nothing)', body: '{"name":"\\u2800\\u2800","categoryId":1}', status: 400, code: 'invalid_body', message: NAME_VISIBLE },
  { name: 'name of Hangul fillers and other default-ignorable characters', body: '{"name":"\\u3164\\u115f\\u1160\\uffa0\\u034f\\u17b4\\u180b\\ufe0f","categoryId":1}', status: 400, code: 'invalid_body', message: NAME_VISIBLE },
  { name: 'name of noncharacters', body: '{"name":"\\ufffe\\uffff\\ufdd0","categoryId":1}', status: 400, code: 'invalid_body', message: NAME_VISIBLE },
  { name: 'name with NUL', body: '{"name":"a\\u0000b","categoryId":1}', status: 400, code: 'invalid_body', message: NAME_VISIBLE },
  { name: 'name with a C1 control', body: '{"name":"a\\u0085b","categoryId":1}', status: 400, code: 'invalid_body', message: NAME_VISIBLE },
  { name: 'name with an unpaired surrogate', body: '{"name":"a\\ud800","categoryId":1}', status: 400, code: 'invalid_body', message: NAME_VISIBLE },
  { name: 'status not in the enum', body: pet(',"status":"lost"'), status: 400, code: 'invalid_body', message: /"status" must be one of: available, pending, sold/ },
  { name: 'status in another case', body: pet(',"status":"Sold"'), status: 400, code: 'invalid_body', message: /"status" must be one of/ },
  { name: 'status null', body: pet(',"status":null'), status: 400, code: 'invalid_body', message: /"status" must be one of/ },
  { name: 'a client-supplied id', body: '{"id":7,"name":"a","categoryId":1}', status: 400, code: 'invalid_body', message: /"id" is not allowed \(allowed: name, categoryId, status\)/ },
  { name: 'an unknown property', body: pet(',"owner":"me"'), status: 400, code: 'invalid_body', message: /"owner" is not allowed/ },
  { name: 'twelve unknown properties', body: pet(Array.from({ length: 12 }, (_, i) => `,"x${i}":1`).join('')), status: 400, code: 'invalid_body', message: /"x0" is not allowed/ },
  { name: 'a repeated key', body: pet(',"categoryId":2'), status: 400, code: 'invalid_body', message: /"categoryId" is given more than once/ },
  { name: 'a key repeated inside a value that is an object', body: '{"name":"a","categoryId":{"name":1,"name":2}}', status: 400, code: 'invalid_body', message: /body field "categoryId" holds the key "name" more than once/ },
  { name: 'a key repeated inside an unknown field', body: '{"name":"a","categoryId":1,"nested":[{"q":1,"q":2}]}', status: 400, code: 'invalid_body', message: /body field "nested" holds the key "q" more than once/ },
  { name: 'a key repeated through an escape', body: '{"name":"a","n\\u0061me":"b","categoryId":1}', status: 400, code: 'invalid_body', message: /"name" is given more than once/ },
  { name: 'missing name', body: '{"categoryId":1}', status: 400, code: 'invalid_body', message: /"name" is required/ },
  { name: 'missing categoryId', body: '{"name":"a"}', status: 400, code: 'invalid_body', message: /"categoryId" is required/ },
  { name: '__proto__ key', body: '{"__proto__":{"admin":true},"name":"a","categoryId":1}', status: 400, code: 'invalid_body', message: /"__proto__" is not allowed/ },
  { name: 'constructor key', body: '{"constructor":{"x":1},"name":"a","categoryId":1}', status: 400, code: 'invalid_body', message: /"constructor" is not allowed/ },
  { name: 'an array', body: '[{"name":"a","categoryId":1}]', status: 400, code: 'invalid_body', message: /^request body must be a JSON object$/ },
  { name: 'null', body: 'null', status: 400, code: 'invalid_body', message: /^request body must be a JSON object$/ },
  { name: 'a string', body: '"pet"', status: 400, code: 'invalid_body', message: /^request body must be a JSON object$/ },
  { name: 'malformed JSON', body: '{"name":"a",', status: 400, code: 'malformed_json', message: /not valid JSON/ },
  { name: 'trailing garbage', body: '{"name":"a","categoryId":1} x', status: 400, code: 'malformed_json', message: /not valid JSON/ },
  { name: 'an empty body', body: '', status: 400, code: 'invalid_body', message: /^request body must be a JSON object$/ },
  { name: 'bytes that are not UTF-8', body: Buffer.from([...Buffer.from('{"name":"'), 0xff, 0xfe, ...Buffer.from('","categoryId":1}')]), status: 400, code: 'malformed_json', message: /not valid UTF-8/ },
  { name: 'text/plain', body: pet(''), headers: { 'content-type': 'text/plain' }, status: 415, code: 'unsupported_media_type', message: /application\/json/ },
  { name: 'form encoding', body: 'name=a&categoryId=1', headers: { 'content-type': 'application/x-www-form-urlencoded' }, status: 415, code: 'unsupported_media_type', message: /application\/json/ },
  { name: 'a JSON-like type', body: pet(''), headers: { 'content-type': 'application/jsonx' }, status: 415, code: 'unsupported_media_type', message: /application\/json/ },
  { name: 'a Latin-1 charset', body: pet(''), headers: { 'content-type': 'application/json; charset=iso-8859-1' }, status: 415, code: 'unsupported_media_type', message: /charset "iso-8859-1"/ },
  { name: 'a UTF-16 charset', body: pet(''), headers: { 'content-type': 'application/json; charset=utf-16' }, status: 415, code: 'unsupported_media_type', message: /charset "utf-16"/ },
  { name: 'charset given twice', body: pet(''), headers: { 'content-type': 'application/json; charset=utf-8; charset=latin1' }, status: 400, code: 'bad_request', message: /^"charset" is given more than once in Content-Type$/ },
  { name: 'charset given twice, the same', body: pet(''), headers: { 'content-type': 'application/json; charset=utf-8; Charset=utf-8' }, status: 400, code: 'bad_request', message: /^"charset" is given more than once in Content-Type$/ },
  { name: 'an unclosed quote in a parameter', body: pet(''), headers: { 'content-type': 'application/json; charset="utf-8' }, status: 415, code: 'unsupported_media_type', message: /Content-Type "application\/json; charset=\\"utf-8" is not valid/ },
  { name: 'junk after a quoted parameter', body: pet(''), headers: { 'content-type': 'application/json; charset=utf-8"junk' }, status: 415, code: 'unsupported_media_type', message: /is not valid/ },
  { name: 'a parameter without a value', body: pet(''), headers: { 'content-type': 'application/json; charset' }, status: 415, code: 'unsupported_media_type', message: /is not valid/ },
  { name: 'a gzip content encoding', body: pet(''), headers: { 'content-encoding': 'gzip' }, status: 415, code: 'unsupported_media_type', message: /Content-Encoding "gzip"/ },
  { name: 'a br content encoding', body: pet(''), headers: { 'content-encoding': 'br' }, status: 415, code: 'unsupported_media_type', message: /Content-Encoding "br"/ },
  { name: 'a deflate content encoding', body: pet(''), headers: { 'content-encoding': 'deflate' }, status: 415, code: 'unsupported_media_type', message: /Content-Encoding "deflate"/ },
  { name: 'a list of content encodings', body: pet(''), headers: { 'content-encoding': 'identity, zstd' }, status: 415, code: 'unsupported_media_type', message: /Content-Encoding "identity, zstd"/ },
  { name: 'arrays 64 deep in the pet (65 levels)', body: pet(`,"x":${'['.repeat(64)}${']'.repeat(64)}`), status: 400, code: 'malformed_json', message: /request body is nested too deeply: at most 64 levels of objects and arrays/ },
  { name: 'arrays 63 deep in the pet (64 levels)', body: pet(`,"x":${'['.repeat(63)}${']'.repeat(63)}`), status: 400, code: 'invalid_body', message: /"x" is not allowed/ },
  { name: 'a body over the limit', body: JSON.stringify({ name: 'a'.repeat(5000), categoryId: 1 }), status: 413, code: 'body_too_large', message: /4096 bytes/ },
]

for (const engine of storeEngines) {
  describe(`strict request bodies (${engine.name})`, engineSuiteOptions(engine), () => {
    let server: TestServer
    const cleanup = suiteCleanup()
    before(async () => {
      server = await startTestServer(cleanup, { engine })
    })

    for (const bad of badBodies) {
      test(`when createPet gets ${bad.name}, then ${bad.status} ${bad.code} and nothing is stored`, async () => {
        const before = await call(server, 'GET', '/v1/pets?limit=100')
        const response = await call(server, 'POST', '/v1/pets', {
          body: bad.body,
          headers: { 'content-type': 'application/json', ...bad.headers },
        })
        assert.equal(response.status, bad.status, response.text)
        assert.equal(response.json.code, bad.code)
        assert.match(response.json.message, bad.message)
        const after = await call(server, 'GET', '/v1/pets?limit=100')
        assert.equal(after.text, before.text, 'a rejected request must change nothing')
      })
    }

    test('when the body comes in a content coding, then the 415 says which coding would be taken (RFC 9110 §15.5.16)', async () => {
      const response = await call(server, 'POST', '/v1/pets', {
        body: pet(''),
        headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
      })
      assert.equal(response.status, 415)
      assert.equal(response.headers.get('accept-encoding'), 'identity')
      // And the document declares it there, for clients generated from it.
      const document = (await call(server, 'GET', '/v1/openapi.json')).json
      const declared = document.paths['/pets'].post.responses['415'].headers
      assert.deepEqual(declared['Accept-Encoding']?.schema, { type: 'string', enum: ['identity'] })
    })

    test('when createPet has a body but no Content-Type header, then 415 saying a body needs application/json', async () => {
      const body = '{"name":"Rex","categoryId":1}'
      const response = await checkedRawHttp(
        server.origin,
        `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${server.key}\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
      )
      assert.equal(response.status, 415)
      assert.deepEqual(JSON.parse(response.body), {
        code: 'unsupported_media_type',
        message: 'a request body needs Content-Type: application/json, and none was sent',
        status: 415,
      })
    })

    test('when createPet has no body and no content type, then 400 invalid_body saying the body must be a JSON object', async () => {
      const response = await call(server, 'POST', '/v1/pets')
      assert.equal(response.status, 400)
      assert.equal(response.json.code, 'invalid_body')
      assert.equal(response.json.message, 'request body must be a JSON object')
    })

    test('when a request says its body is JSON but sends none (neither Content-Length nor Transfer-Encoding, as `curl -X POST -H "Content-Type: application/json"` does), then it is answered at once: createPet 400 invalid_body, with Expect: 100-continue too and no 100 Continue, any other method and path as without a Content-Type', async () => {
      const send = (method: string, path: string, extra = '') =>
        checkedRawHttp(
          server.origin,
          `${method} ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${server.key}\r\nContent-Type: application/json\r\n${extra}Connection: close\r\n\r\n`,
        )
      for (const expect of ['', 'Expect: 100-continue\r\n']) {
        const response = await send('POST', '/v1/pets', expect)
        // A 100 Continue sent first would be the status read here.
        assert.equal(response.status, 400, expect)
        assert.deepEqual(JSON.parse(response.body), {
          code: 'invalid_body',
          message: 'request body must be a JSON object',
          status: 400,
        })
      }
      // Fastify reads a body for these methods on any route, the not-found one included.
      for (const [method, path, status] of [
        ['QUERY', '/', 404],
        ['PUT', '/v1/pets', 405],
        ['PATCH', '/v1/nowhere', 404],
      ] as const) {
        assert.equal((await send(method, path)).status, status, `${method} ${path}`)
      }
    })

    test('when a body is empty, then createPet answers the same whatever its framing (none, Content-Length: 0 or 00, an empty chunked body) and with or without a Content-Type: 400 invalid_body; a chunked body with bytes and no Content-Type stays 415', async () => {
      const send = (headers: string, body: string) =>
        checkedRawHttp(
          server.origin,
          `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${server.key}\r\n` +
            `${headers}Connection: close\r\n\r\n${body}`,
        )
      for (const contentType of ['Content-Type: application/json\r\n', '']) {
        for (const framing of [
          '',
          'Content-Length: 0\r\n',
          'Content-Length: 00\r\n',
          'Transfer-Encoding: chunked\r\n',
        ]) {
          const response = await send(
            contentType + framing,
            framing.startsWith('Transfer') ? '0\r\n\r\n' : '',
          )
          const label = JSON.stringify(contentType + framing)
          assert.equal(response.status, 400, label)
          assert.deepEqual(
            JSON.parse(response.body),
            { code: 'invalid_body', message: 'request body must be a JSON object', status: 400 },
            label,
          )
        }
      }
      const body = pet('')
      const bytes = await send(
        'Transfer-Encoding: chunked\r\n',
        `${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`,
      )
      assert.deepEqual([bytes.status, JSON.parse(bytes.body).code], [415, 'unsupported_media_type'])
      // Refused at once, before their bytes: a body of a length, and chunks that wait for 100 Continue
      // (neither is waited for: it would be answered 408 at the request timeout, its bytes never sent).
      for (const head of [
        'Content-Length: 20\r\n',
        'Expect: 100-continue\r\nTransfer-Encoding: chunked\r\n',
      ]) {
        const waiting = await send(head, '')
        assert.deepEqual(
          [waiting.status, JSON.parse(waiting.body).code],
          [415, 'unsupported_media_type'],
          head,
        )
      }
      const zeros = await send('Expect: 100-continue\r\nContent-Length: 000\r\n', '')
      assert.deepEqual([zeros.status, JSON.parse(zeros.body).code], [400, 'invalid_body'])
    })

    test('when the content type has a UTF-8 charset (or its utf8 alias) or another case, or the body is sent with Content-Encoding identity in any case, then JSON is still accepted', async () => {
      for (const encoding of ['identity', 'IDENTITY']) {
        const response = await call(server, 'POST', '/v1/pets', {
          body: pet(''),
          headers: { 'content-encoding': encoding },
        })
        assert.equal(response.status, 201, encoding)
      }
      for (const contentType of [
        'application/json; charset=utf-8',
        'application/json; charset=UTF8',
        'application/json;charset="UTF-8"',
        'Application/JSON',
        // A parameter of another name whose quoted value holds "; charset=…" names no charset.
        'application/json; foo="x; charset=latin1"',
        'application/json ; charset=utf-8 ; ',
        'application/json;;charset=utf-8',
        'application/json; charset="utf\\-8"',
      ]) {
        const response = await call(server, 'POST', '/v1/pets', {
          body: pet(''),
          headers: { 'content-type': contentType },
        })
        assert.equal(response.status, 201, contentType)
      }
    })

    test('when Content-Type is sent twice, in either order or with an empty one, then the same 400 and nothing is stored', async () => {
      const body = pet('')
      const stored = async () => (await call(server, 'GET', '/v1/pets?limit=100')).json.length
      const before = await stored()
      for (const [first, second] of [
        ['application/json', 'text/plain'],
        ['text/plain', 'application/json'],
        ['', 'application/json'],
        ['application/json; charset=latin1', 'application/json'],
        ['application/json; charset=utf-8; charset=utf-8', 'application/json'],
      ]) {
        const response = await checkedRawHttp(
          server.origin,
          `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${server.key}\r\nContent-Type: ${first}\r\nContent-Type: ${second}\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
        )
        assert.equal(response.status, 400, `${first} then ${second}`)
        assert.deepEqual(JSON.parse(response.body), {
          code: 'bad_request',
          message: 'more than one Content-Type header',
          status: 400,
        })
      }
      assert.equal(await stored(), before)
    })
  })
}
