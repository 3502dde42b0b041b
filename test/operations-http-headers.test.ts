import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { generateApiKey, storedFormOf } from '../src/auth/api-key.ts'
import { call } from './helpers/api-client.ts'
import { checkedFetch, checkedRawHttp, checkRawResponse } from './helpers/conformance-fetch.ts'
import { rawHttp } from './helpers/raw-http.ts'
import { startTestServer } from './helpers/test-server.ts'

describe('HTTP hygiene', () => {
  test('when the API answers, then nosniff is set and authenticated answers are not stored by caches', async (t) => {
    const server = await startTestServer(t)
    const created = await call(server, 'POST', '/v1/pets', { body: { name: 'Rex', categoryId: 1 } })
    for (const response of [created, await call(server, 'GET', '/v1/pets', { key: false })]) {
      assert.equal(response.headers.get('x-content-type-options'), 'nosniff')
      assert.equal(response.headers.get('cache-control'), 'no-store')
    }
    assert.equal((await call(server, 'GET', '/v1/pets')).headers.get('cache-control'), 'private, no-cache')
    assert.equal(created.headers.get('server'), null, 'no version banner')
    assert.equal(created.headers.get('x-powered-by'), null)
  })

  test('when HEAD is sent for the pet list, then it gets the headers GET gets and no body', async (t) => {
    const server = await startTestServer(t)
    await call(server, 'POST', '/v1/pets', { body: { name: 'Rex', categoryId: 1 } })
    const ask = (method: string) =>
      rawHttp(
        server.origin,
        `${method} /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${server.key}\r\nConnection: close\r\n\r\n`,
      )
    const get = await checkRawResponse(server.origin, 'GET', '/v1/pets', await ask('GET'))
    const head = await ask('HEAD')
    assert.equal(get.status, 200)
    assert.match(get.body, /"name":"Rex"/)
    assert.equal(head.status, 200)
    assert.equal(head.body, '', 'not one byte of body after the headers')
    // What differs per request by design: the date, the request id, and the rate-limit count.
    const lasting = (headers: Record<string, string>) =>
      Object.entries(headers)
        .filter(([name]) => !['date', 'x-request-id'].includes(name) && !name.startsWith('ratelimit'))
        .sort(([a], [b]) => a.localeCompare(b))
    assert.deepEqual(lasting(head.headers), lasting(get.headers))
    assert.equal(head.headers['content-length'], String(Buffer.byteLength(get.body)), 'the length GET sends')
  })

  test('when TRACE is tried, then 405', async (t) => {
    const server = await startTestServer(t)
    const request = 'TRACE /v1/pets HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'
    const response = await checkedRawHttp(server.origin, request)
    assert.equal(response.status, 405)
  })

  test('when CORS is off (the default), then no browser origin is allowed, and a preflight is 405 with Allow, without CORS headers', async (t) => {
    const server = await startTestServer(t)
    const response = await call(server, 'GET', '/v1/pets', { headers: { origin: 'https://evil.example' } })
    assert.equal(response.headers.get('access-control-allow-origin'), null)
    const preflight = await fetch(`${server.origin}/v1/pets`, {
      method: 'OPTIONS',
      headers: { origin: 'https://app.example', 'access-control-request-method': 'POST' },
    })
    assert.equal(preflight.status, 405)
    assert.equal(preflight.headers.get('allow'), 'GET, HEAD, POST')
    assert.equal(((await preflight.json()) as { code: string }).code, 'method_not_allowed')
    const cors = [...preflight.headers.keys()].filter((name) => name.startsWith('access-control-'))
    assert.deepEqual(cors, [])
  })

  test('when CORS_ORIGINS lists an origin, then that origin may call and preflight; others may not', async (t) => {
    const server = await startTestServer(t, { env: { CORS_ORIGINS: 'https://app.example' } })
    const allowed = await call(server, 'GET', '/v1/pets', { headers: { origin: 'https://app.example' } })
    assert.equal(allowed.headers.get('access-control-allow-origin'), 'https://app.example')
    // Each CORS header it carries is one the document declares for the operation, for generated clients.
    const document = (await call(server, 'GET', '/v1/openapi.json')).json
    // A browser's script reads every header the document declares on an operation's answers, but CORS's
    // own, those it reads anyway (safelisted) and those whose words the Error body carries.
    type Answers = Record<string, { headers?: object }>
    const answered = new Set(
      (Object.values(document.paths) as Record<string, { responses: Answers }>[])
        .flatMap((methods) => Object.values(methods))
        .flatMap((operation) => Object.values(operation.responses))
        .flatMap((answer) => Object.keys(answer.headers ?? {}).map((name) => name.toLowerCase())),
    )
    const unexposed = [
      'cache-control',
      'vary',
      'www-authenticate',
      'accept-encoding',
      'x-content-type-options',
    ]
    const exposed = (allowed.headers.get('access-control-expose-headers') ?? '').split(/, */)
    assert.deepEqual(
      [...answered].filter((name) => !name.startsWith('access-control-') && !unexposed.includes(name)).sort(),
      [...exposed].sort(),
    )
    const declared = Object.keys(document.paths['/pets'].get.responses['200'].headers).map((name) =>
      name.toLowerCase(),
    )
    const cors = [...allowed.headers.keys()].filter((name) => /^(access-control-|vary$)/.test(name))
    assert.deepEqual(
      cors.filter((name) => !declared.includes(name)),
      [],
    )
    // Whole origins only: one that starts like the listed one (another host, another port) is not it.
    for (const origin of [
      'https://evil.example',
      'https://app.example.evil.com',
      'https://app.example:8443',
    ]) {
      const other = await call(server, 'GET', '/v1/pets', { headers: { origin } })
      assert.equal(other.headers.get('access-control-allow-origin'), null, origin)
    }
    const preflight = await fetch(`${server.origin}/v1/pets`, {
      method: 'OPTIONS',
      headers: {
        origin: 'https://app.example',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization, content-type, idempotency-key',
      },
    })
    assert.ok(preflight.ok, String(preflight.status))
    assert.match(preflight.headers.get('access-control-allow-headers') ?? '', /idempotency-key/)
    // A preflight is a request as any other: it carries what every answer carries.
    assert.match(preflight.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/)
    assert.equal(preflight.headers.get('x-content-type-options'), 'nosniff')
  })

  test("when CORS is on and a path cannot be decoded (the router's own 400), then the answer carries the CORS headers any other answer does, so a browser reads the error", async (t) => {
    const server = await startTestServer(t, { env: { CORS_ORIGINS: 'https://app.example' } })
    const corsOf = (response: { headers: Headers }) =>
      [...response.headers].filter(([name]) => /^(access-control-|vary$)/.test(name))
    for (const origin of ['https://app.example', 'https://evil.example']) {
      const headers = { origin }
      const undecodable = await call(server, 'GET', '/v1/pets/%zz', { headers })
      assert.equal(undecodable.status, 400)
      const missing = await call(server, 'GET', '/v1/pets/12345', { headers })
      assert.equal(missing.status, 404)
      assert.deepEqual(corsOf(undecodable), corsOf(missing), origin)
    }
  })

  test('when CORS is on, then a preflight is 204 with the allowed methods and headers, and an OPTIONS that is no preflight is 405 with Allow on a path of the API and 404 elsewhere, as with CORS off', async (t) => {
    const server = await startTestServer(t, { env: { CORS_ORIGINS: 'https://app.example' } })
    const options = (path: string, headers: Record<string, string> = {}) =>
      fetch(`${server.origin}${path}`, { method: 'OPTIONS', headers })
    const preflight = await options('/v1/pets/1', {
      origin: 'https://app.example',
      'access-control-request-method': 'GET',
    })
    assert.equal(preflight.status, 204)
    assert.equal(preflight.headers.get('access-control-allow-origin'), 'https://app.example')
    assert.equal(preflight.headers.get('access-control-allow-methods'), 'GET, HEAD', "the path's own")
    assert.equal(preflight.headers.get('access-control-max-age'), '600')
    for (const headers of [{}, { origin: 'https://app.example' }] as Array<Record<string, string>>) {
      const plain = await options('/v1/pets', headers)
      assert.equal(plain.status, 405, JSON.stringify(headers))
      assert.equal(plain.headers.get('allow'), 'GET, HEAD, POST')
      assert.equal(((await plain.json()) as { code: string }).code, 'method_not_allowed')
    }
    const elsewhere = await options('/v1/nope')
    assert.equal(elsewhere.status, 404)
    assert.equal(((await elsewhere.json()) as { code: string }).code, 'route_not_found')
  })

  test('when CORS is on, then an OPTIONS with two Host headers is refused, and during a shutdown an OPTIONS is answered 503 with Connection: close', async (t) => {
    const server = await startTestServer(t, { env: { CORS_ORIGINS: 'https://app.example' } })
    const preflightHead =
      'OPTIONS /v1/pets HTTP/1.1\r\nOrigin: https://app.example\r\nAccess-Control-Request-Method: POST\r\n'
    const twoHosts = await rawHttp(
      server.origin,
      `${preflightHead}Host: a\r\nHost: b\r\nConnection: close\r\n\r\n`,
    )
    assert.equal(twoHosts.status, 400, twoHosts.body)
    server.app.refuseRequests()
    const closing = await rawHttp(server.origin, `${preflightHead}Host: x\r\n\r\n`)
    assert.equal(closing.status, 503, closing.body)
    assert.equal(closing.headers.connection, 'close')
    // The drain's 503 to a browser's call is one its page can read.
    const call503 = await rawHttp(
      server.origin,
      `GET /v1/pets HTTP/1.1\r\nHost: x\r\nOrigin: https://app.example\r\nAuthorization: Bearer ${server.key}\r\n\r\n`,
    )
    assert.equal(call503.status, 503, call503.body)
    assert.equal(call503.headers['access-control-allow-origin'], 'https://app.example')
  })
})

describe('request ids', () => {
  test('when X-Request-Id is 128 characters, then it is kept; when it is 129, then it is replaced', async (t) => {
    const server = await startTestServer(t)
    const longest = 'a'.repeat(128)
    const kept = await call(server, 'GET', '/v1/pets', { headers: { 'x-request-id': longest } })
    assert.equal(kept.headers.get('x-request-id'), longest)
    const tooLong = `${longest}b`
    const replaced = await call(server, 'GET', '/v1/pets', { headers: { 'x-request-id': tooLong } })
    assert.match(replaced.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/)
  })

  test('when requests give no X-Request-Id, then each answer carries a new random UUID, version 4', async (t) => {
    const server = await startTestServer(t)
    // More than one draw of random bytes (256 ids a draw): an id made from spent bytes would repeat.
    const ids: string[] = []
    for (let sent = 0; sent < 600; sent += 20) {
      const batch = Array.from({ length: 20 }, () => call(server, 'GET', '/healthz'))
      for (const response of await Promise.all(batch)) ids.push(response.headers.get('x-request-id') ?? '')
    }
    for (const id of ids)
      assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    assert.equal(new Set(ids).size, ids.length, 'an id was given twice')
    // Every random digit's place takes all sixteen values over 600 ids (a place stuck on a few would not).
    const places = [...'00000000-0000-4000-8000-000000000000'].flatMap((c, at) => (c === '0' ? [at] : []))
    for (const at of places) {
      const seen = new Set(ids.map((id) => id[at]))
      assert.equal(seen.size, 16, `place ${at} took only ${[...seen].sort().join('')}`)
    }
  })
})

describe('rate limiting per API key (in memory)', () => {
  test('when a key goes over RATE_LIMIT_PER_MINUTE, then 429 with Retry-After and RateLimit headers; other keys are not affected', async (t) => {
    const server = await startTestServer(t, { env: { RATE_LIMIT_PER_MINUTE: '3' } })
    for (let i = 0; i < 3; i++) {
      const ok = await call(server, 'GET', '/v1/pets')
      assert.equal(ok.status, 200)
      assert.equal(ok.headers.get('ratelimit-limit'), '3')
      assert.equal(ok.headers.get('ratelimit-remaining'), String(2 - i))
    }
    const limited = await call(server, 'GET', '/v1/pets')
    assert.equal(limited.status, 429)
    assert.equal(limited.json.code, 'rate_limited')
    assert.match(limited.headers.get('retry-after') ?? '', /^\d+$/)
    assert.ok(limited.headers.get('ratelimit-reset'))
    const other = generateApiKey()
    await server.store.createApiKey(storedFormOf('other', other))
    assert.equal((await call(server, 'GET', '/v1/pets', { key: other })).status, 200)
    assert.equal((await checkedFetch(server.origin, '/healthz')).status, 200, 'probes are never limited')
  })

  test('when RATE_LIMIT_PER_MINUTE is 0, then there is no limit and no RateLimit header', async (t) => {
    const server = await startTestServer(t, { env: { RATE_LIMIT_PER_MINUTE: '0' } })
    const response = await call(server, 'GET', '/v1/pets')
    assert.equal(response.headers.get('ratelimit-limit'), null)
  })
})
