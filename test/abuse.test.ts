import assert from 'node:assert/strict'
import { before, describe, test } from 'node:test'
import { generateApiKey, storedFormOf } from '../src/auth/api-key.ts'
import type { Store } from '../src/store/store.ts'
import {
  ask,
  bearer,
  expensiveBodies,
  failingStore,
  json,
  LEAK,
  malformedCredentials,
  operations,
  petCount,
  smuggledFields,
  streamOversizedBody,
} from './helpers/abuse-cases.ts'
import { call } from './helpers/api-client.ts'
import { rawHttp } from './helpers/raw-http.ts'
import { startTestServer, suiteCleanup, type TestServer } from './helpers/test-server.ts'

// OWASP API Security Top 10 (2023), the items that apply to this service. What other files already prove
// is not repeated: see the comment above each block. API1 (object-level authorization), API5 (function
// level), API6 (business flows), API7 (SSRF) and API10 (unsafe consumption) have no surface here: pets
// belong to the store, not to a key; there is no admin function over HTTP (the route inventory below proves
// it); the service fetches no URL and consumes no other API.

// Covered elsewhere: http-auth.test.ts (nine malformed forms × every operation, scheme case, key in the
// query and two headers on listPets, revocation within the cache TTL, keys stored hashed, 401 before the
// body is read); fuzz.test.ts (credential forms at random × every operation, keys in the query).
describe('API2:2023 broken authentication', () => {
  let server: TestServer
  let revoked: string
  const cleanup = suiteCleanup()
  before(async () => {
    server = await startTestServer(cleanup, { env: { RATE_LIMIT_PER_MINUTE: '0' } })
    revoked = generateApiKey()
    await server.store.createApiKey(storedFormOf('revoked', revoked))
    await server.store.revokeApiKey('revoked')
  })

  for (const operation of operations) {
    for (const [index, { name }] of malformedCredentials('k', 'r').entries()) {
      test(`when ${operation.name} is called with ${name}, then 401 with a Bearer challenge and nothing is created`, async () => {
        const { lines, query } = malformedCredentials(server.key, revoked)[index] ?? assert.fail()
        const stored = await petCount(server)
        const target = `${operation.target}${query ? `?${query}` : ''}`
        const headers = [...lines, ...(operation.body ? [json] : [])]
        const reply = await ask(server, operation.method, target, headers, operation.body)
        assert.equal(reply.status, 401, reply.text)
        assert.match(reply.headers.get('www-authenticate') ?? '', /^Bearer realm="petstore"/)
        if (operation.method !== 'HEAD') assert.equal(JSON.parse(reply.text).code, 'unauthorized')
        assert.equal(await petCount(server), stored)
      })
    }
  }

  test('when the key follows several spaces or the header has white space around it, then it is accepted (RFC 6750: 1*SP)', async () => {
    for (const value of [`Bearer   ${server.key}`, `  Bearer ${server.key}  `, `bearer ${server.key}\t`]) {
      const reply = await ask(server, 'GET', '/v1/pets', [['Authorization', value]])
      assert.equal(reply.status, 200, JSON.stringify(value))
    }
  })

  test('when a key is revoked or was never issued, then the answers are the same (nothing tells which keys exist)', async () => {
    const answer = async (key: string) => {
      const reply = await ask(server, 'GET', '/v1/pets', [bearer(key)])
      const { message } = JSON.parse(reply.text)
      return { status: reply.status, challenge: reply.headers.get('www-authenticate'), message }
    }
    assert.deepEqual(await answer(revoked), await answer(generateApiKey()))
  })
})

// Covered elsewhere: http-strict-body.test.ts (a client `id`, unknown properties, top-level `__proto__` and
// `constructor`, repeated keys); openapi.test.ts (NewPet has additionalProperties: false); fuzz.test.ts.
describe('API3:2023 property-level authorization (mass assignment)', () => {
  let server: TestServer
  const cleanup = suiteCleanup()
  before(async () => {
    server = await startTestServer(cleanup)
  })

  for (const [field = '', value] of smuggledFields) {
    test(`when createPet also sends "${field}", then 400 invalid_body, nothing is stored and no prototype is touched`, async () => {
      const stored = await petCount(server)
      const response = await call(server, 'POST', '/v1/pets', {
        body: `{"name":"Rex","categoryId":1,"${field}":${value}}`,
      })
      assert.equal(response.status, 400, response.text)
      assert.equal(response.json.code, 'invalid_body')
      assert.match(response.json.message, new RegExp(`"${JSON.parse(`"${field}"`)}" is not allowed`))
      assert.equal(await petCount(server), stored)
      assert.equal(({} as Record<string, unknown>).polluted, undefined)
    })
  }

  test('when __proto__ hides inside a nested value, then 400 and nothing is stored', async () => {
    const body = '{"name":"Rex","categoryId":1,"status":"sold","x":{"y":[{"__proto__":{"polluted":true}}]}}'
    assert.equal((await call(server, 'POST', '/v1/pets', { body })).status, 400)
    assert.equal(({} as Record<string, unknown>).polluted, undefined)
  })

  test('when a pet is created, replayed, fetched and listed, then every representation has only Pet fields (no created_at, no key)', async () => {
    const options = {
      body: { name: 'Rex', categoryId: 1, status: 'sold' },
      headers: { 'idempotency-key': 'k-1' },
    }
    const created = await call(server, 'POST', '/v1/pets', options)
    const replayed = await call(server, 'POST', '/v1/pets', options)
    const fetched = await call(server, 'GET', `/v1/pets/${created.json.id}`)
    const listed = await call(server, 'GET', '/v1/pets?status=sold')
    for (const pet of [created.json, replayed.json, fetched.json, ...listed.json])
      assert.deepEqual(Object.keys(pet).sort(), ['categoryId', 'id', 'name', 'status'])
  })
})

/** A createPet request's head, with `key`, announcing a JSON body of `length` bytes. */
const postHead = (key: string, length: number) =>
  `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`
/** A request sent behind another on its connection: answered only if that connection was kept. */
const NEXT_REQUEST = 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'

// Covered elsewhere: http-strict-url.test.ts (limit 0, 101 and huge; twelve unknown parameters);
// http-errors.test.ts (declared and chunked bodies over the limit → 413); http-head-limits.test.ts
// (headers over 16 KiB → 431); http-protocol.test.ts and operations-http-headers.test.ts (slow headers and
// bodies cut off with 408 while others are served, MAX_CONNECTIONS, event-loop shedding, per-key rate
// limits); rate-limit-redis.test.ts.
describe('API4:2023 unrestricted resource consumption', () => {
  let server: TestServer
  const cleanup = suiteCleanup()
  before(async () => {
    server = await startTestServer(cleanup)
  })

  test('when listPets asks for a million pets, then 400 invalid_query instead of a huge page', async () => {
    for (const query of ['limit=1000000', 'limit=1000000&status=sold', `limit=${2n ** 63n}`]) {
      const response = await call(server, 'GET', `/v1/pets?${query}`)
      assert.equal(response.status, 400, query)
      assert.equal(response.json.code, 'invalid_query')
    }
  })

  test('when a client streams a 256 MiB body, then 413 comes at once and the connection is closed, not read to the end', {
    timeout: 20_000,
  }, async () => {
    const { answer, sent } = await streamOversizedBody(server, 256 * 2 ** 20)
    assert.match(answer, /^HTTP\/1\.1 413 /)
    assert.match(answer, /"code":"body_too_large"/)
    assert.ok(sent <= 32 * 2 ** 20, `${sent} bytes were taken in before the server hung up`)
  })

  test('when a client with an unknown key streams a 256 MiB body, then 401 comes at once and the connection is closed, not read to the end', {
    timeout: 20_000,
  }, async () => {
    const { answer, sent } = await streamOversizedBody(server, 256 * 2 ** 20, generateApiKey())
    assert.match(answer, /^HTTP\/1\.1 401 /)
    assert.match(answer, /\r\nconnection: close\r\n/i)
    assert.ok(sent <= 32 * 2 ** 20, `${sent} bytes were taken in before the server hung up`)
  })

  test('when a POST with a small body is refused (an unknown key), then its connection is kept: a request sent after it on the same connection is answered', async () => {
    const body = '{"name":"Rex","categoryId":1}'
    const answered = await rawHttp(
      server.origin,
      postHead(generateApiKey(), body.length) + body + NEXT_REQUEST,
    )
    assert.equal(answered.status, 401)
    assert.equal(answered.headers.connection, 'keep-alive')
    assert.match(answered.body, /HTTP\/1\.1 200 /, 'the request after it was answered')
  })

  test('when a refused POST announces a body of 64 KiB, then it is read and the connection kept; of one byte more, then the connection is closed after the answer, the body not waited for', async () => {
    const head = (length: number) => postHead(generateApiKey(), length)
    const kept = await rawHttp(server.origin, head(64 * 1024) + ' '.repeat(64 * 1024) + NEXT_REQUEST)
    assert.equal(kept.status, 401)
    assert.equal(kept.headers.connection, 'keep-alive')
    assert.match(kept.body, /HTTP\/1\.1 200 /, 'the request after it was answered')
    // Its body never sent: answered and closed at once, within rawHttp's wait for the close.
    const closed = await rawHttp(server.origin, head(64 * 1024 + 1))
    assert.equal(closed.status, 401)
    assert.equal(closed.headers.connection, 'close')
  })

  for (const [what, body, status] of [
    ['over the 4 KiB limit (5 KiB, under 64 KiB)', `{"name":"${'x'.repeat(5000)}","categoryId":1}`, 413],
    ['not valid JSON', '{"name":"Rex",', 400],
  ] as const) {
    test(`when a POST with a small body ${what} is refused with a valid key, then its connection is kept: a request sent after it on the same connection is answered`, async () => {
      const refused = postHead(server.key, Buffer.byteLength(body)) + body
      const answered = await rawHttp(server.origin, refused + NEXT_REQUEST)
      assert.equal(answered.status, status)
      assert.notEqual(answered.headers.connection, 'close')
      assert.match(answered.body, /HTTP\/1\.1 200 /, 'the request after it was answered')
    })
  }

  test('when small bodies are built to be expensive (deep nesting, many keys, escapes, long numbers), then each is refused fast', async () => {
    for (const body of expensiveBodies) {
      assert.ok(body.length <= 4096, 'under the body limit: refused for what it is, not for its size')
      // The process's CPU time (server and client are both here), which a loaded host does not stretch
      // as it does the wall clock: a parse gone quadratic would take seconds of it.
      const started = process.cpuUsage()
      const response = await call(server, 'POST', '/v1/pets', { body })
      const { user, system } = process.cpuUsage(started)
      const ms = (user + system) / 1000
      assert.equal(response.status, 400, body.slice(0, 40))
      assert.ok(ms < 500, `${body.slice(0, 40)}… took ${ms.toFixed(0)} ms of CPU`)
    }
  })
})

// Covered elsewhere: http-service-failures.test.ts (a failing getPet store call → 500 with no detail; a
// 503 without the host); operations-http-headers.test.ts (nosniff, no-store, no banner on a 201, TRACE
// /v1/pets → 405, CORS off by default and allow-listed); operations-process.test.ts (metrics not on the API
// port).
describe('API8:2023 security misconfiguration', () => {
  const internal = new Error('SQLITE_CORRUPT: SELECT hash FROM api_keys at /srv/petstore/src/store/x.ts:42:7')
  const pet = { name: 'Rex', categoryId: 1 }
  // biome-ignore format: a table
  const failures: Array<[string, keyof Store, string, unknown?]> = [['listPets', 'listPets', 'GET'],
    ['createPet', 'createPet', 'POST', pet], ['the key lookup of listPets', 'findActiveApiKeys', 'GET'],
    ['the key lookup of createPet', 'findActiveApiKeys', 'POST', pet]]
  for (const [what, method, verb, body] of failures) {
    test(`when ${what} fails inside the store, then 500 internal_error naming only the request id`, async (t) => {
      const server = await startTestServer(t, { store: failingStore(method, internal) })
      const response = await call(server, verb, '/v1/pets', { body })
      assert.equal(response.status, 500)
      assert.equal(response.json.code, 'internal_error')
      const requestId = response.headers.get('x-request-id')
      assert.equal(response.json.message, `internal error (request id ${requestId})`)
      assert.doesNotMatch(response.text, LEAK)
    })
  }

  test('when a store call rejects with nothing (null or undefined), then it is still a 500 in the Error body', async (t) => {
    for (const reason of [null, undefined]) {
      const server = await startTestServer(t, { store: failingStore('getPet', reason) })
      const response = await call(server, 'GET', '/v1/pets/1')
      assert.equal(response.json.code, 'internal_error')
      assert.doesNotMatch(response.text, LEAK)
    }
  })

  test('when an internal error carries an HTTP status or a framework code, then it is still a 500 with no detail', async (t) => {
    const withStatus = Object.assign(new Error('INSERT INTO pets failed at /srv/db'), { statusCode: 400 })
    const withCode = Object.assign(new Error('violates unique constraint'), { code: 'FST_ERR_BAD_URL' })
    for (const reason of [withStatus, withCode]) {
      const server = await startTestServer(t, { store: failingStore('listPets', reason) })
      const response = await call(server, 'GET', '/v1/pets')
      assert.equal(response.status, 500)
      assert.doesNotMatch(response.text, LEAK)
    }
  })
})
