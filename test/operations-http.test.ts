import assert from 'node:assert/strict'
import { connect } from 'node:net'
import { describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { generateApiKey, storedFormOf } from '../src/auth/api-key.ts'
import { SqliteStore } from '../src/store/sqlite/sqlite-store.ts'
import type { Store } from '../src/store/store.ts'
import { call } from './helpers/api-client.ts'
import { rawHttp } from './helpers/raw-http.ts'
import { startTestServer } from './helpers/test-server.ts'

describe('health probes', () => {
  test('when probed without a key, then /healthz and /readyz answer 200 and carry no data', async (t) => {
    const server = await startTestServer(t)
    const health = await fetch(`${server.origin}/healthz`)
    assert.equal(health.status, 200)
    assert.deepEqual(await health.json(), { status: 'ok' })
    const ready = await fetch(`${server.origin}/readyz`)
    assert.equal(ready.status, 200)
    assert.deepEqual(await ready.json(), { status: 'ready' })
  })

  test('when the store cannot answer or its schema is behind, then /readyz is 503 in the Error body', async (t) => {
    const broken = (override: Partial<Store>) =>
      new Proxy(new SqliteStore({ path: ':memory:', busyTimeoutMs: 100 }), {
        get(target, property) {
          if (property in override) return override[property as keyof Store]
          const value = Reflect.get(target, property)
          return typeof value === 'function' ? value.bind(target) : value
        },
      })
    for (const store of [
      broken({ schemaStatus: () => Promise.reject(new Error('connection refused')) }),
      broken({ schemaStatus: async () => ({ current: 1, latest: 2 }) }),
    ]) {
      const server = await startTestServer(t, { store })
      const response = await fetch(`${server.origin}/readyz`)
      assert.equal(response.status, 503)
      const body = (await response.json()) as { code: string; message: string }
      assert.equal(body.code, 'service_unavailable')
      assert.match(body.message, /^not ready/)
      assert.doesNotMatch(body.message, /refused/)
      assert.equal((await fetch(`${server.origin}/healthz`)).status, 200, 'alive even when not ready')
    }
  })
})

describe('HTTP hygiene', () => {
  test('when the API answers, then nosniff is set and authenticated answers are not stored by caches', async (t) => {
    const server = await startTestServer(t)
    const created = await call(server, 'POST', '/v1/pets', { body: { name: 'Rex', categoryId: 1 } })
    for (const response of [created, await call(server, 'GET', '/v1/pets', { key: false })]) {
      assert.equal(response.headers.get('x-content-type-options'), 'nosniff')
      assert.equal(response.headers.get('cache-control'), 'no-store')
    }
    assert.equal(response(await call(server, 'GET', '/v1/pets')).get('cache-control'), 'private, no-cache')
    assert.equal(created.headers.get('server'), null, 'no version banner')
    assert.equal(created.headers.get('x-powered-by'), null)
  })

  test('when TRACE is tried, then 405', async (t) => {
    const server = await startTestServer(t)
    const response = await rawHttp(
      server.origin,
      'TRACE /v1/pets HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
    )
    assert.equal(response.status, 405)
  })

  test('when CORS is off (the default), then no browser origin is allowed', async (t) => {
    const server = await startTestServer(t)
    const response = await call(server, 'GET', '/v1/pets', { headers: { origin: 'https://evil.example' } })
    assert.equal(response.headers.get('access-control-allow-origin'), null)
  })

  test('when CORS_ORIGINS lists an origin, then that origin may call and preflight; others may not', async (t) => {
    const server = await startTestServer(t, { env: { CORS_ORIGINS: 'https://app.example' } })
    const allowed = await call(server, 'GET', '/v1/pets', { headers: { origin: 'https://app.example' } })
    assert.equal(allowed.headers.get('access-control-allow-origin'), 'https://app.example')
    assert.match(allowed.headers.get('access-control-expose-headers') ?? '', /link/)
    const other = await call(server, 'GET', '/v1/pets', { headers: { origin: 'https://evil.example' } })
    assert.equal(other.headers.get('access-control-allow-origin'), null)
    const preflight = await fetch(`${server.origin}/v1/pets`, {
      method: 'OPTIONS',
      headers: {
        origin: 'https://app.example',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization, content-type, idempotency-key',
      },
    })
    assert.equal(preflight.status, 204)
    assert.match(preflight.headers.get('access-control-allow-headers') ?? '', /idempotency-key/)
  })
})

function response(r: { headers: Headers }) {
  return r.headers
}

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
    assert.equal((await fetch(`${server.origin}/healthz`)).status, 200, 'probes are never limited')
  })

  test('when RATE_LIMIT_PER_MINUTE is 0, then there is no limit and no RateLimit header', async (t) => {
    const server = await startTestServer(t, { env: { RATE_LIMIT_PER_MINUTE: '0' } })
    const response = await call(server, 'GET', '/v1/pets')
    assert.equal(response.headers.get('ratelimit-limit'), null)
  })
})

describe('resource defences', () => {
  test('when a client sends its headers too slowly, then it is cut off while other clients are served', async (t) => {
    const server = await startTestServer(t, { env: { HEADERS_TIMEOUT_MS: '500', REQUEST_TIMEOUT_MS: '600' } })
    const slow = connect({ host: '127.0.0.1', port: Number(new URL(server.origin).port) })
    let received = ''
    slow.on('data', (chunk) => {
      received += chunk
    })
    const closed = new Promise((resolve) => slow.on('close', resolve))
    slow.write('GET /v1/pets HTTP/1.1\r\nHost: x\r\n')
    const dripping = setInterval(() => slow.writable && slow.write('X-Slow: 1\r\n'), 100)
    t.after(() => clearInterval(dripping))
    const started = Date.now()
    for (let i = 0; i < 5; i++) {
      assert.equal((await call(server, 'GET', '/v1/pets')).status, 200, 'a normal client is served meanwhile')
      await sleep(50)
    }
    await closed
    clearInterval(dripping)
    assert.ok(Date.now() - started < 3000)
    assert.match(received, /^HTTP\/1\.1 408 /)
  })

  test('when the event loop is stalled beyond MAX_EVENT_LOOP_DELAY_MS, then requests are shed with 503 and Retry-After', async (t) => {
    const server = await startTestServer(t, { env: { MAX_EVENT_LOOP_DELAY_MS: '50' } })
    assert.equal((await call(server, 'GET', '/v1/pets')).status, 200)
    const until = Date.now() + 1000
    while (Date.now() < until) {
      // Deliberately block the event loop, as a CPU-bound burst would.
    }
    await sleep(50)
    const shed = await call(server, 'GET', '/v1/pets')
    assert.equal(shed.status, 503)
    assert.equal(shed.json.code, 'service_unavailable')
    assert.match(shed.json.message, /overloaded/)
    assert.equal(shed.headers.get('retry-after'), '1')
  })
})
