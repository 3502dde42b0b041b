import assert from 'node:assert/strict'
import { before, describe, test } from 'node:test'
import { call } from './helpers/api-client.ts'
import { engineSuiteOptions, storeEngines } from './helpers/store-engines.ts'
import { startTestServer, suiteCleanup, type TestServer } from './helpers/test-server.ts'

interface BadRequest {
  name: string
  body: string
  contentType?: string
  status: number
  code: string
  /** What the message must say: the offending field and its rule. */
  message: RegExp
}

const INT64 = /must be an integer from -9223372036854775808 to 9223372036854775807/

const badBodies: BadRequest[] = [
  {
    name: 'categoryId as a string',
    body: '{"name":"a","categoryId":"5"}',
    status: 400,
    code: 'invalid_body',
    message: /"categoryId".*integer/,
  },
  {
    name: 'categoryId with a fraction',
    body: '{"name":"a","categoryId":1.5}',
    status: 400,
    code: 'invalid_body',
    message: INT64,
  },
  {
    name: 'categoryId written 1.0',
    body: '{"name":"a","categoryId":1.0}',
    status: 400,
    code: 'invalid_body',
    message: INT64,
  },
  {
    name: 'categoryId with an exponent',
    body: '{"name":"a","categoryId":1e3}',
    status: 400,
    code: 'invalid_body',
    message: INT64,
  },
  {
    name: 'categoryId above int64',
    body: '{"name":"a","categoryId":9223372036854775808}',
    status: 400,
    code: 'invalid_body',
    message: INT64,
  },
  {
    name: 'categoryId below int64',
    body: '{"name":"a","categoryId":-9223372036854775809}',
    status: 400,
    code: 'invalid_body',
    message: INT64,
  },
  {
    name: 'categoryId far out of range',
    body: '{"name":"a","categoryId":1e400}',
    status: 400,
    code: 'invalid_body',
    message: INT64,
  },
  {
    name: 'categoryId null',
    body: '{"name":"a","categoryId":null}',
    status: 400,
    code: 'invalid_body',
    message: /"categoryId"/,
  },
  {
    name: 'categoryId boolean',
    body: '{"name":"a","categoryId":true}',
    status: 400,
    code: 'invalid_body',
    message: /"categoryId"/,
  },
  {
    name: 'name as a number',
    body: '{"name":123,"categoryId":1}',
    status: 400,
    code: 'invalid_body',
    message: /"name" must be a string of 1 to 100 characters/,
  },
  {
    name: 'empty name',
    body: '{"name":"","categoryId":1}',
    status: 400,
    code: 'invalid_body',
    message: /"name" must be a string of 1 to 100 characters/,
  },
  {
    name: 'blank name',
    body: '{"name":"   ","categoryId":1}',
    status: 400,
    code: 'invalid_body',
    message: /"name" must not be blank/,
  },
  {
    name: 'name with a control character',
    body: '{"name":"a\\u0000b","categoryId":1}',
    status: 400,
    code: 'invalid_body',
    message: /"name" must not .*control characters/,
  },
  {
    name: 'name with an unpaired surrogate',
    body: '{"name":"a\\ud800","categoryId":1}',
    status: 400,
    code: 'invalid_body',
    message: /"name" .*unpaired surrogates/,
  },
  {
    name: 'name of 101 characters',
    body: `{"name":"${'x'.repeat(101)}","categoryId":1}`,
    status: 400,
    code: 'invalid_body',
    message: /"name" must be a string of 1 to 100/,
  },
  {
    name: 'status not in the enum',
    body: '{"name":"a","categoryId":1,"status":"lost"}',
    status: 400,
    code: 'invalid_body',
    message: /"status" must be one of: available, pending, sold/,
  },
  {
    name: 'status in another case',
    body: '{"name":"a","categoryId":1,"status":"Sold"}',
    status: 400,
    code: 'invalid_body',
    message: /"status"/,
  },
  {
    name: 'status null',
    body: '{"name":"a","categoryId":1,"status":null}',
    status: 400,
    code: 'invalid_body',
    message: /"status"/,
  },
  {
    name: 'a client-supplied id',
    body: '{"id":7,"name":"a","categoryId":1}',
    status: 400,
    code: 'invalid_body',
    message: /"id" is not allowed \(allowed: name, categoryId, status\)/,
  },
  {
    name: 'an unknown property',
    body: '{"name":"a","categoryId":1,"owner":"me"}',
    status: 400,
    code: 'invalid_body',
    message: /"owner" is not allowed/,
  },
  {
    name: 'missing name',
    body: '{"categoryId":1}',
    status: 400,
    code: 'invalid_body',
    message: /"name" is required/,
  },
  {
    name: 'missing categoryId',
    body: '{"name":"a"}',
    status: 400,
    code: 'invalid_body',
    message: /"categoryId" is required/,
  },
  {
    name: '__proto__ key',
    body: '{"__proto__":{"admin":true},"name":"a","categoryId":1}',
    status: 400,
    code: 'invalid_body',
    message: /"__proto__" is not allowed/,
  },
  {
    name: 'constructor key',
    body: '{"constructor":{"x":1},"name":"a","categoryId":1}',
    status: 400,
    code: 'invalid_body',
    message: /"constructor" is not allowed/,
  },
  {
    name: 'an array',
    body: '[{"name":"a","categoryId":1}]',
    status: 400,
    code: 'invalid_body',
    message: /request body must be a JSON object/,
  },
  {
    name: 'null',
    body: 'null',
    status: 400,
    code: 'invalid_body',
    message: /request body must be a JSON object/,
  },
  {
    name: 'a string',
    body: '"pet"',
    status: 400,
    code: 'invalid_body',
    message: /request body must be a JSON object/,
  },
  {
    name: 'malformed JSON',
    body: '{"name":"a",',
    status: 400,
    code: 'malformed_json',
    message: /not valid JSON/,
  },
  {
    name: 'trailing garbage',
    body: '{"name":"a","categoryId":1} x',
    status: 400,
    code: 'malformed_json',
    message: /not valid JSON/,
  },
  { name: 'an empty body', body: '', status: 400, code: 'malformed_json', message: /empty/ },
  {
    name: 'text/plain',
    body: '{"name":"a","categoryId":1}',
    contentType: 'text/plain',
    status: 415,
    code: 'unsupported_media_type',
    message: /application\/json/,
  },
  {
    name: 'form encoding',
    body: 'name=a&categoryId=1',
    contentType: 'application/x-www-form-urlencoded',
    status: 415,
    code: 'unsupported_media_type',
    message: /application\/json/,
  },
  {
    name: 'a JSON-like type',
    body: '{"name":"a","categoryId":1}',
    contentType: 'application/jsonx',
    status: 415,
    code: 'unsupported_media_type',
    message: /application\/json/,
  },
  {
    name: 'a body over the limit',
    body: JSON.stringify({ name: 'a'.repeat(5000), categoryId: 1 }),
    status: 413,
    code: 'body_too_large',
    message: /4096 bytes/,
  },
]

const badQueries: Array<{ query: string; message: RegExp }> = [
  { query: 'limit=0', message: /"limit" must be an integer from 1 to 100/ },
  { query: 'limit=101', message: /"limit" must be an integer from 1 to 100/ },
  { query: 'limit=-1', message: /"limit" must be an integer from 1 to 100/ },
  { query: 'limit=abc', message: /"limit" must be an integer from 1 to 100/ },
  { query: 'limit=2.5', message: /"limit" must be an integer from 1 to 100/ },
  { query: 'limit=1e1', message: /"limit" must be an integer/ },
  { query: 'limit=0x10', message: /"limit" must be an integer/ },
  { query: 'limit=%2010', message: /"limit" must be an integer/ },
  { query: 'limit=010', message: /"limit" must be an integer/ },
  { query: 'limit=', message: /"limit" must be an integer/ },
  { query: 'limit=99999999999999999999', message: /"limit" must be an integer from 1 to 100/ },
  { query: 'limit=1&limit=2', message: /"limit" must be given once/ },
  { query: 'status=bogus', message: /"status" must be one of: available, pending, sold/ },
  { query: 'status=', message: /"status" must be one of/ },
  { query: 'status=sold&status=pending', message: /"status" must be given once/ },
  { query: 'offset=10', message: /"offset" is not allowed \(allowed: limit, status\)/ },
]

const badPetIds = [
  'abc',
  '1.5',
  '1e3',
  '0x1F',
  '9223372036854775808',
  '-9223372036854775809',
  '01',
  '+1',
  '%20',
]

for (const engine of storeEngines) {
  describe(`strict input (${engine.name})`, engineSuiteOptions(engine), () => {
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
          headers: { 'content-type': bad.contentType ?? 'application/json' },
        })
        assert.equal(response.status, bad.status, response.text)
        assert.equal(response.json.code, bad.code)
        assert.match(response.json.message, bad.message)
        const after = await call(server, 'GET', '/v1/pets?limit=100')
        assert.equal(after.text, before.text, 'a rejected request must change nothing')
      })
    }

    test('when createPet has no body and no content type, then 400 invalid_body', async () => {
      const response = await call(server, 'POST', '/v1/pets')
      assert.equal(response.status, 400)
      assert.equal(response.json.code, 'invalid_body')
    })

    test('when the content type has a charset or different case, then JSON is still accepted', async () => {
      for (const contentType of ['application/json; charset=utf-8', 'Application/JSON']) {
        const response = await call(server, 'POST', '/v1/pets', {
          body: '{"name":"ok","categoryId":1}',
          headers: { 'content-type': contentType },
        })
        assert.equal(response.status, 201, contentType)
      }
    })

    for (const { query, message } of badQueries) {
      test(`when listPets gets ?${query}, then 400 invalid_query naming the parameter`, async () => {
        const response = await call(server, 'GET', `/v1/pets?${query}`)
        assert.equal(response.status, 400, response.text)
        assert.equal(response.json.code, 'invalid_query')
        assert.match(response.json.message, message)
      })
    }

    for (const petId of badPetIds) {
      test(`when getPet gets petId ${petId}, then 400 invalid_path_parameter`, async () => {
        const response = await call(server, 'GET', `/v1/pets/${petId}`)
        assert.equal(response.status, 400, response.text)
        assert.equal(response.json.code, 'invalid_path_parameter')
        assert.match(response.json.message, /"petId" must be an integer from -9223372036854775808/)
      })
    }

    test('when petId is longer than any int64, then 400 invalid_path_parameter', async () => {
      const response = await call(server, 'GET', `/v1/pets/${'9'.repeat(500)}`)
      assert.equal(response.status, 400)
      assert.equal(response.json.code, 'invalid_path_parameter')
    })
  })
}
