import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { DatabaseSync } from 'node:sqlite'
import { before, describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { generateApiKey, storedFormOf } from '../src/auth/api-key.ts'
import { call } from './helpers/api-client.ts'
import { checkedRawHttp } from './helpers/conformance-fetch.ts'
import { engineSuiteOptions, storeEngines } from './helpers/store-engines.ts'
import { startTestServer, suiteCleanup, type TestServer } from './helpers/test-server.ts'

// `granted` is what a valid key gets; pet 1 is created before any of them runs.
const operations = [
  { name: 'listPets', method: 'GET', path: '/v1/pets', granted: [200] },
  {
    name: 'createPet',
    method: 'POST',
    path: '/v1/pets',
    body: { name: 'Rex', categoryId: 1 },
    granted: [201],
  },
  { name: 'getPet', method: 'GET', path: '/v1/pets/1', granted: [200] },
]

for (const engine of storeEngines) {
  describe(`bearer API keys (${engine.name})`, engineSuiteOptions(engine), () => {
    let server: TestServer
    const cleanup = suiteCleanup()
    before(async () => {
      server = await startTestServer(cleanup, { engine })
      const first = await call(server, 'POST', '/v1/pets', { body: { name: 'First', categoryId: 1 } })
      assert.equal(first.json.id, 1)
    })

    const badCredentials: Array<{ name: string; header?: string; challenge: RegExp; message?: RegExp }> = [
      { name: 'no Authorization header', challenge: /^Bearer realm="petstore"$/ },
      { name: 'an empty header', header: '', challenge: /^Bearer realm="petstore"/ },
      // `Bearer $KEY` with the variable unset in this shell: the message says the key is missing.
      {
        name: 'the scheme alone',
        header: 'Bearer',
        challenge: /error="invalid_request"/,
        message: /^no key after "Bearer": send "Authorization: Bearer <key>"$/,
      },
      {
        name: 'the scheme and spaces',
        header: 'Bearer   ',
        challenge: /error="invalid_request"/,
        message: /^no key after/,
      },
      // RFC 6750 §3.1: another scheme is no bearer request at all, so the challenge carries no error code.
      { name: 'Basic credentials', header: 'Basic dXNlcjpwYXNz', challenge: /^Bearer realm="petstore"$/ },
      {
        name: 'a token without scheme',
        header: 'psk_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
        challenge: /^Bearer realm="petstore"$/,
      },
      { name: 'an unknown key', header: `Bearer ${generateApiKey()}`, challenge: /error="invalid_token"/ },
      { name: 'a key of the wrong shape', header: 'Bearer psk_short', challenge: /error="invalid_token"/ },
      {
        name: 'a key with a wrong prefix',
        header: 'Bearer sk_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
        challenge: /error="invalid_token"/,
      },
      { name: 'two tokens', header: 'Bearer a b', challenge: /error="invalid_request"/ },
      // RFC 6750 §2.1: a token is b64token characters; anything else is a malformed request, not a bad key.
      { name: 'a quoted key', header: `Bearer "${generateApiKey()}"`, challenge: /error="invalid_request"/ },
      {
        name: 'a token with a character outside b64token',
        header: 'Bearer psk_é',
        challenge: /error="invalid_request"/,
      },
      {
        name: 'a tab after the scheme',
        header: `Bearer\t${generateApiKey()}`,
        challenge: /error="invalid_request"/,
      },
    ]

    for (const operation of operations) {
      for (const bad of badCredentials) {
        test(`when ${operation.name} is called with ${bad.name}, then 401 with WWW-Authenticate`, async () => {
          const headers: Record<string, string> =
            bad.header === undefined ? {} : { authorization: bad.header }
          const response = await call(server, operation.method, operation.path, {
            body: operation.body,
            headers,
            key: false,
          })
          assert.equal(response.status, 401)
          assert.equal(response.json.code, 'unauthorized')
          assert.match(response.headers.get('www-authenticate') ?? '', bad.challenge)
          if (bad.message !== undefined) assert.match(response.json.message, bad.message)
          // Never echoed: proxies, gateways and clients keep error bodies in their logs.
          const credential = bad.header?.replace(/^(Bearer|Basic) /, '') ?? ''
          if (credential.length >= 9) assert.equal(response.text.includes(credential), false, response.text)
        })
      }

      test(`when ${operation.name} is called with a valid key, then it is served`, async () => {
        const response = await call(server, operation.method, operation.path, { body: operation.body })
        assert.ok(operation.granted.includes(response.status), `status ${response.status}`)
      })

      test(`when ${operation.name} is called, after a valid key was served, with that key's last character changed, then 401`, async () => {
        assert.equal((await call(server, 'GET', '/v1/pets')).status, 200)
        const near = server.key.slice(0, -1) + (server.key.endsWith('A') ? 'B' : 'A')
        const response = await call(server, operation.method, operation.path, {
          body: operation.body,
          key: near,
        })
        assert.equal(response.status, 401)
        assert.match(response.headers.get('www-authenticate') ?? '', /error="invalid_token"/)
      })
    }

    test('when the scheme is written in any case, then the key is accepted', async () => {
      for (const scheme of ['bearer', 'BEARER', 'BeArEr']) {
        const response = await call(server, 'GET', '/v1/pets', {
          headers: { authorization: `${scheme} ${server.key}` },
        })
        assert.equal(response.status, 200, scheme)
      }
    })

    test('when a valid key is stuck to the scheme, with no space between, then 401 with the bare challenge', async () => {
      for (const scheme of ['Bearer', 'bearer']) {
        const response = await call(server, 'GET', '/v1/pets', {
          headers: { authorization: `${scheme}${server.key}` },
        })
        assert.equal(response.status, 401, scheme)
        assert.equal(response.headers.get('www-authenticate'), 'Bearer realm="petstore"')
      }
    })

    test('when the key is sent in the query string instead of the header, then it is ignored (401)', async () => {
      for (const name of ['api_key', 'access_token', 'key']) {
        const response = await call(server, 'GET', `/v1/pets?${name}=${server.key}`, { key: false })
        assert.equal(response.status, 401, name)
      }
    })

    test('when two Authorization headers are sent, even both valid, then 401', async () => {
      const request = `GET /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${server.key}\r\nAuthorization: Bearer ${server.key}\r\nConnection: close\r\n\r\n`
      const response = await checkedRawHttp(server.origin, request)
      assert.equal(response.status, 401)
      assert.equal(JSON.parse(response.body).code, 'unauthorized')
    })

    test('when two Authorization headers differ only in the case of their names, then 401', async () => {
      const request = `GET /v1/pets HTTP/1.1\r\nHost: x\r\nauthorization: Bearer ${server.key}\r\nAUTHORIZATION: Bearer ${server.key}\r\nConnection: close\r\n\r\n`
      const response = await checkedRawHttp(server.origin, request)
      assert.equal(response.status, 401)
      assert.match(JSON.parse(response.body).message, /more than one Authorization header/)
    })

    test('when refusals follow one another, then each carries its own headers and nothing of the last', async () => {
      const unknownKey = { authorization: `Bearer ${generateApiKey()}` }
      const refusedGet = await call(server, 'GET', '/v1/pets/1', { headers: unknownKey, key: false })
      const refusedList = await call(server, 'GET', '/v1/pets', { headers: unknownKey, key: false })
      const refusedAgain = await call(server, 'GET', '/v1/pets/1', { headers: unknownKey, key: false })
      for (const response of [refusedGet, refusedList, refusedAgain]) {
        assert.equal(response.status, 401)
        assert.deepEqual(response.json, {
          code: 'unauthorized',
          message: 'invalid or revoked API key',
          status: 401,
        })
        assert.equal(
          response.headers.get('www-authenticate'),
          'Bearer realm="petstore", error="invalid_token"',
        )
      }
      // Only getPet is deprecated: the list's refusal must not take on what the getPet refusal carried.
      assert.ok(refusedGet.headers.has('deprecation'))
      assert.ok(refusedAgain.headers.has('deprecation'))
      assert.equal(refusedList.headers.get('deprecation'), null)
      const requestIds = [refusedGet, refusedList, refusedAgain].map((r) => r.headers.get('x-request-id'))
      assert.equal(new Set(requestIds).size, 3)
    })

    test('when the request is unauthenticated, then the body is not even read (401 before 413/415, and before Content-Type sent twice)', async () => {
      const response = await call(server, 'POST', '/v1/pets', {
        body: 'x'.repeat(10_000),
        headers: { 'content-type': 'text/plain' },
        key: false,
      })
      assert.equal(response.status, 401)
      // Content-Type twice is a content-type rule, as README says: a 400 with a key, a 401 without one.
      const twice = await checkedRawHttp(
        server.origin,
        'POST /v1/pets HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Type: text/plain\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}',
      )
      assert.equal(twice.status, 401, twice.body)
    })

    test('when the request is unauthenticated, then a petId of any length is 401, as a short bad one is', async () => {
      for (const petId of ['abc', '9'.repeat(21), '9'.repeat(101), '9'.repeat(5000)]) {
        const response = await call(server, 'GET', `/v1/pets/${petId}`, { key: false })
        assert.equal(response.status, 401, `${petId.length} characters: ${response.text}`)
      }
    })
  })
}

describe('key revocation', () => {
  // 0 reuses no lookup: the very next request is refused.
  for (const [ttlMs, within] of [
    ['200', 'within API_KEY_CACHE_TTL_MS'],
    ['0', 'at its very next request when API_KEY_CACHE_TTL_MS is 0'],
  ] as const) {
    test(`when a key is revoked, then the server refuses it ${within}`, async (t) => {
      const server = await startTestServer(t, { env: { API_KEY_CACHE_TTL_MS: ttlMs } })
      const key = generateApiKey()
      await server.store.createApiKey(storedFormOf('temporary', key))
      assert.equal((await call(server, 'GET', '/v1/pets', { key })).status, 200)
      assert.equal(await server.store.revokeApiKey('temporary'), true)
      if (ttlMs !== '0') await sleep(Number(ttlMs) + 50)
      const response = await call(server, 'GET', '/v1/pets', { key })
      assert.equal(response.status, 401)
      assert.equal(response.json.message, 'invalid or revoked API key')
    })
  }
})

describe('a wall clock that steps back', () => {
  test('when the wall clock steps back ten minutes (an NTP step, a VM resumed), then a revoked key is still refused within API_KEY_CACHE_TTL_MS', async (t) => {
    // A wall clock of the test's own, made before the server so that every part of it reads this one.
    t.mock.timers.enable({ apis: ['Date'], now: Date.now() })
    const server = await startTestServer(t, { env: { API_KEY_CACHE_TTL_MS: '200' } })
    const key = generateApiKey()
    await server.store.createApiKey(storedFormOf('stepped', key))
    assert.equal((await call(server, 'GET', '/v1/pets', { key })).status, 200)
    t.mock.timers.setTime(Date.now() - 600_000)
    assert.equal(await server.store.revokeApiKey('stepped'), true)
    await sleep(250)
    assert.equal((await call(server, 'GET', '/v1/pets', { key })).status, 401)
  })
})

describe('API_KEYS setting', () => {
  test('when keys are given in API_KEYS and provisioned, then they authenticate; revoked ones stay revoked', async (t) => {
    const { provisionKeys } = await import('../src/cli/provision-keys.ts')
    const key = generateApiKey()
    const server = await startTestServer(t, { env: { API_KEYS: `deploy:${key}` } })
    const provision = () =>
      provisionKeys({
        store: server.store,
        config: server.config,
        log: server.app.log,
        dataDirectory: undefined,
        terminal: { write: () => assert.fail('nothing is printed when keys exist') },
      })
    await provision()
    assert.equal((await call(server, 'GET', '/v1/pets', { key })).status, 200)
    const stored = (await server.store.listApiKeys()).find((record) => record.name === 'deploy')
    // Written out, not the service's own function: `keys list` shows `psk_` and four characters.
    assert.equal(stored?.hint, `${key.slice(0, 8)}…`)
    const database = new DatabaseSync((server.databaseUrl ?? '').slice('sqlite:'.length), { readOnly: true })
    const rows = JSON.stringify(database.prepare('SELECT name, hash, hint FROM api_keys').all())
    database.close()
    assert.equal(rows.includes(key), false, 'keys are stored hashed')
    // Computed here, not by the service's own function: a changed algorithm would lock out every stored key.
    assert.ok(rows.includes(createHash('sha256').update(key).digest('hex')), 'stored as SHA-256, hex')

    await server.store.revokeApiKey('deploy')
    await provision()
    const after = (await server.store.listApiKeys()).filter((record) => record.name === 'deploy')
    assert.equal(after.length, 1)
    assert.ok(after[0]?.revokedAt, 'a revoked key is not revived by a restart')
  })
})
