import assert from 'node:assert/strict'
import { once } from 'node:events'
import { connect, type Socket } from 'node:net'
import { describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { pino } from 'pino'
import { generateApiKey, storedFormOf } from '../src/auth/api-key.ts'
import { SqliteStore } from '../src/store/sqlite/sqlite-store.ts'
import type { Store } from '../src/store/store.ts'
import { call } from './helpers/api-client.ts'
import { waitUntil } from './helpers/bounded-wait.ts'
import { checkedFetch, checkedRawHttp, checkRawResponse } from './helpers/conformance-fetch.ts'
import { exchange, openSocket, rawHttp } from './helpers/raw-http.ts'
import { startTestServer } from './helpers/test-server.ts'

describe('health probes', () => {
  test('when probed without a key, then /healthz and /readyz answer 200 and carry no data', async (t) => {
    const server = await startTestServer(t)
    const health = await checkedFetch(server.origin, '/healthz')
    assert.equal(health.status, 200)
    assert.deepEqual(await health.json(), { status: 'ok' })
    const ready = await checkedFetch(server.origin, '/readyz')
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
      const response = await checkedFetch(server.origin, '/readyz')
      assert.equal(response.status, 503)
      const body = (await response.json()) as { code: string; message: string }
      assert.equal(body.code, 'service_unavailable')
      assert.match(body.message, /^not ready/)
      assert.doesNotMatch(body.message, /refused/)
      assert.equal((await checkedFetch(server.origin, '/healthz')).status, 200, 'alive even when not ready')
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

  // A timeout of its own: without the request timeout, the slow client would be waited for forever.
  test('when a client sends its body too slowly, then it is cut off with 408 while other clients are served meanwhile', {
    timeout: 10_000,
  }, async (t) => {
    const server = await startTestServer(t, { env: { HEADERS_TIMEOUT_MS: '500', REQUEST_TIMEOUT_MS: '600' } })
    const slow = await openSocket(server.origin)
    let received = ''
    slow.on('data', (chunk) => {
      received += chunk
    })
    const closed = once(slow, 'close')
    slow.write(
      `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${server.key}\r\n` +
        'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{',
    )
    const dripping = setInterval(() => slow.writable && slow.write(' '), 100)
    t.after(() => clearInterval(dripping))
    const started = Date.now()
    // Normal clients in parallel with the slow one, several at a time, until it is cut off.
    let cutOff = false
    const normal = async (i: number) => {
      for (let n = 0; !cutOff; n++) {
        const response = await call(server, 'POST', '/v1/pets', {
          body: { name: `n${i}-${n}`, categoryId: 1 },
        })
        assert.equal(response.status, 201, 'a normal client is served meanwhile')
        await sleep(50)
      }
    }
    const clients = [0, 1, 2].map(normal)
    await closed
    cutOff = true
    clearInterval(dripping)
    await Promise.all(clients)
    assert.ok(Date.now() - started < 3000)
    assert.match(received, /^HTTP\/1\.1 408 /)
    assert.match(received, /"code":"request_timeout"/)
    const { json } = await call(server, 'GET', '/v1/pets?limit=100')
    assert.ok(json.length >= 9, 'the normal clients wrote throughout')
  })

  test('when MAX_CONNECTIONS sockets are open, then one more is closed unanswered while the others are served', {
    timeout: 10_000,
  }, async (t) => {
    const server = await startTestServer(t, { env: { MAX_CONNECTIONS: '3' } })
    const probe = 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'
    const open = await Promise.all([0, 1, 2].map(() => openSocket(server.origin)))
    t.after(() => {
      for (const socket of open) socket.destroy()
    })
    for (const socket of open) assert.match(await exchange(socket, probe), /^HTTP\/1\.1 200 /)

    const extra = connect({ host: '127.0.0.1', port: Number(new URL(server.origin).port) })
    let answered = ''
    extra.on('data', (chunk) => {
      answered += chunk
    })
    extra.on('error', () => {}) // a reset is as good a refusal as a close
    extra.on('connect', () => extra.write(probe))
    await once(extra, 'close')
    assert.equal(answered, '', 'the socket over the cap gets no answer')

    for (const socket of open) assert.match(await exchange(socket, probe), /^HTTP\/1\.1 200 /, 'still served')
    // The cap counts open sockets: with one closed, a new one is served.
    const [first] = open.splice(0, 1)
    first?.destroy()
    await once(first as Socket, 'close')
    const connections = () =>
      new Promise<number>((resolve, reject) =>
        server.app.server.getConnections((error, count) => (error ? reject(error) : resolve(count))),
      )
    // The server sees the close a moment later.
    await waitUntil(async () => (await connections()) < 3, 'the server still counts the closed socket')
    const later = await openSocket(server.origin)
    open.push(later)
    assert.match(await exchange(later, probe), /^HTTP\/1\.1 200 /)
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

  test('when the heap in use is above MAX_HEAP_USED_BYTES, then API requests are shed with 503 (logged once for the condition) while probes still answer', async (t) => {
    // Logged at info, as in production: the error line must not break the answer it describes.
    const lines: Array<Record<string, unknown>> = []
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) })
    // Any heap is above one megabyte: every sample finds the service over the limit.
    const server = await startTestServer(t, {
      env: { MAX_HEAP_USED_BYTES: String(1024 * 1024), MAX_EVENT_LOOP_DELAY_MS: '0' },
      app: { logger },
    })
    await sleep(400)
    for (let i = 0; i < 2; i++) {
      const shed = await call(server, 'GET', '/v1/pets')
      assert.equal(shed.status, 503)
      assert.deepEqual(shed.json, {
        code: 'service_unavailable',
        message: 'the service is overloaded; retry shortly',
        status: 503,
      })
      assert.equal(shed.headers.get('retry-after'), '1')
    }
    assert.equal((await fetch(`${server.origin}/healthz`)).status, 200)
    // Once for the condition, at warn, not per request; each request's own line names it.
    const condition = 'the service is overloaded'
    assert.equal(lines.filter((line) => line.condition === condition && line.level === 40).length, 1)
    const shedLines = lines.filter((line) => line.msg === 'request' && line.status === 503)
    assert.equal(shedLines.length, 2)
    assert.ok(shedLines.every((line) => line.condition === condition))
  })

  test('when MAX_EVENT_LOOP_DELAY_MS is 0, then a long stall sheds nothing, even with the heap limit on', async (t) => {
    const server = await startTestServer(t, {
      env: { MAX_EVENT_LOOP_DELAY_MS: '0', MAX_HEAP_USED_BYTES: String(100 * 1024 * 1024 * 1024) },
    })
    const until = Date.now() + 600
    while (Date.now() < until) {
      // Blocked far beyond any delay limit that could apply.
    }
    await sleep(300)
    assert.equal((await call(server, 'GET', '/v1/pets')).status, 200)
  })

  test('when the event loop stalls once for less than MAX_EVENT_LOOP_DELAY_MS, then no request is shed', async (t) => {
    const server = await startTestServer(t, { env: { MAX_EVENT_LOOP_DELAY_MS: '1000' } })
    assert.equal((await call(server, 'GET', '/v1/pets')).status, 200)
    const until = Date.now() + 600
    while (Date.now() < until) {
      // A long garbage collection or a slow synchronous step: well under the limit.
    }
    // Across more than one sampling interval, so the stall is measured before the last request.
    const statuses = []
    for (let i = 0; i < 12; i++) {
      statuses.push((await call(server, 'GET', '/v1/pets')).status)
      await sleep(100)
    }
    assert.deepEqual(new Set(statuses), new Set([200]))
  })
})
