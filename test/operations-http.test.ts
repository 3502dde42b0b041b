import assert from 'node:assert/strict'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { describe, test } from 'node:test'
import { setTimeout } from 'node:timers/promises'
import { generateApiKey, storedFormOf } from '../src/auth/api-key.ts'
import { latestVersion } from '../src/store/shared/migration-plan.ts'
import { sqliteMigrations } from '../src/store/sqlite/sqlite-migrations.ts'
import { SqliteStore } from '../src/store/sqlite/sqlite-store.ts'
import type { Store } from '../src/store/store.ts'
import { call } from './helpers/api-client.ts'
import { logLines, requesterFor, runCli, startServeProcess, stop, waitForLog } from './helpers/cli-process.ts'
import { checkedFetch, checkedRawHttp, checkRawResponse } from './helpers/conformance-fetch.ts'
import { rawHttp } from './helpers/raw-http.ts'
import { startTestServer, temporaryDirectory } from './helpers/test-server.ts'

const key = generateApiKey()
const request = requesterFor(key)

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
      broken({ schemaStatus: async () => ({ current: 1, latest: 2, compatibleFrom: 1 }) }),
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

  test('when the store does not answer (a frozen database), then /readyz says so with 503 after its 0.9 s bound, rather than leaving the probe to time out', async (t) => {
    const hanging = new Proxy(new SqliteStore({ path: ':memory:', busyTimeoutMs: 100 }), {
      get(target, property) {
        if (property === 'health') return () => new Promise(() => {})
        const value = Reflect.get(target, property)
        return typeof value === 'function' ? value.bind(target) : value
      },
    })
    const server = await startTestServer(t, { store: hanging })
    const asked = performance.now()
    const response = await checkedFetch(server.origin, '/readyz')
    const tookMs = performance.now() - asked
    assert.equal(response.status, 503)
    assert.equal(response.headers.get('retry-after'), '1')
    const body = (await response.json()) as { message: string }
    assert.equal(body.message, 'not ready: the store did not answer within 0.9 s')
    assert.ok(tookMs < 5000, `answered after ${tookMs} ms`)
  })
})

/**
 * Records in the database at `cwd` what the next release's migration leaves behind, as its first instance
 * applies it: compatible (its floor this release's schema) or not. Returns this release's schema version.
 */
function newerMigration(cwd: string, kind: 'compatible' | 'incompatible'): number {
  const db = new DatabaseSync(join(cwd, 'data', 'petstore.db'))
  try {
    db.exec('PRAGMA busy_timeout = 5000')
    const newest = Number(db.prepare('SELECT max(version) AS v FROM schema_migrations').get()?.v)
    const latest = latestVersion(sqliteMigrations)
    const version = newest + 1
    db.prepare('INSERT INTO schema_migrations (version, name, compatible_from) VALUES (?, ?, ?)').run(
      version,
      `a newer release, ${kind}`,
      kind === 'compatible' ? latest : version,
    )
    return latest
  } finally {
    db.close()
  }
}

describe('readiness during an upgrade', () => {
  test("when a newer release migrates the schema under a running instance, keeping this release's working, then it stays ready and serving, and says so once in its log", async (t) => {
    const cwd = temporaryDirectory(t)
    const server = await startServeProcess({ API_KEYS: `ops:${key}` }, cwd)
    t.after(() => server.child.kill('SIGKILL'))
    assert.equal((await checkedFetch(server.origin, '/readyz')).status, 200)
    const latest = newerMigration(cwd, 'compatible')
    for (let probe = 0; probe < 3; probe++) {
      const ready = await checkedFetch(server.origin, '/readyz')
      assert.equal(ready.status, 200, await ready.text())
    }
    assert.equal(
      (await request(server, '/v1/pets', { headers: { 'x-request-id': 'after-probes' } })).status,
      200,
    )
    // The request after the probes is logged after whatever they logged: then every warning is in.
    await waitForLog(server, (lines) => lines.find((line) => line.reqId === 'after-probes'))
    const said = logLines(server).filter((line) =>
      String(line.msg).startsWith('the database schema is newer'),
    )
    assert.equal(said.length, 1, 'said once')
    assert.deepEqual(
      [said[0]?.level, said[0]?.schema, said[0]?.release, said[0]?.compatibleFrom],
      [40, latest + 1, latest, latest],
    )
  })

  test('when a newer release migrates the schema beyond what this release can run on, then a running instance turns not ready, naming the schema it needs, and refuses creates with 503 while reads go on', async (t) => {
    const cwd = temporaryDirectory(t)
    const server = await startServeProcess({ API_KEYS: `ops:${key}` }, cwd)
    t.after(() => server.child.kill('SIGKILL'))
    assert.equal((await checkedFetch(server.origin, '/readyz')).status, 200)
    const latest = newerMigration(cwd, 'incompatible')
    const ready = await checkedFetch(server.origin, '/readyz')
    assert.equal(ready.status, 503)
    assert.equal(ready.headers.get('retry-after'), '5')
    assert.equal(
      ((await ready.json()) as { message: string }).message,
      `not ready: database schema version ${latest + 1} is newer than this release knows (${latest}) and needs a release made for schema ${latest + 1} or later`,
    )
    // A client that reaches it directly (or before the balancer has taken it out) writes nothing into a
    // schema whose meaning this release may not know.
    const create = () =>
      request(server, '/v1/pets', { method: 'POST', body: '{"name":"Rex","categoryId":1}' })
    const refused = await create()
    assert.equal(refused.status, 503, await refused.clone().text())
    assert.equal(refused.headers.get('retry-after'), '5')
    assert.equal(
      ((await refused.json()) as { message: string }).message,
      "this instance's release is older than the database schema; retry on another instance",
    )
    assert.equal((await request(server, '/v1/pets')).status, 200)
    // Said once, at warn: a deployment's state, not a fault (the probe's line names the schema needed).
    const said = await waitForLog(server, (lines) =>
      lines.find((line) => line.condition === "this instance's release is older than the database schema"),
    )
    assert.equal(said.level, 40)
    assert.match(String(said.msg), /requests that meet it are answered 503 until it passes$/)
  })

  test('when a newer release migrates the schema beyond what this release can run on and no probe comes, then within seconds a running instance refuses creates with 503 all the same', async (t) => {
    const cwd = temporaryDirectory(t)
    const server = await startServeProcess({ API_KEYS: `ops:${key}` }, cwd)
    t.after(() => server.child.kill('SIGKILL'))
    newerMigration(cwd, 'incompatible')
    // A deployment without readiness probes (compose, systemd), or a worker no probe reached: the
    // instance reads the schema itself every few seconds.
    const deadline = Date.now() + 15_000
    let status = 0
    while (Date.now() < deadline) {
      const create = await request(server, '/v1/pets', {
        method: 'POST',
        body: '{"name":"Rex","categoryId":1}',
      })
      status = create.status
      if (status === 503) {
        assert.equal(create.headers.get('retry-after'), '5')
        break
      }
      assert.equal(status, 201, await create.text())
      await setTimeout(250)
    }
    assert.equal(status, 503, 'refused without a probe')
    assert.equal((await request(server, '/v1/pets')).status, 200)
  })

  test('when an instance of this release starts on a newer schema (a rollback), then it serves if the newer migrations keep it working, and refuses in one line if not', async (t) => {
    const cwd = temporaryDirectory(t)
    const first = await startServeProcess({ API_KEYS: `ops:${key}` }, cwd)
    await stop(first)
    const latest = newerMigration(cwd, 'compatible')
    const server = await startServeProcess({ API_KEYS: `ops:${key}` }, cwd)
    t.after(() => server.child.kill('SIGKILL'))
    assert.equal((await checkedFetch(server.origin, '/readyz')).status, 200)
    assert.equal((await request(server, '/v1/pets')).status, 200)
    const warned = await waitForLog(server, (lines) =>
      lines.find((line) => String(line.msg).startsWith('the database schema is newer than this release')),
    )
    assert.deepEqual([warned.level, warned.schema, warned.release], [40, latest + 1, latest])
    await stop(server)
    newerMigration(cwd, 'incompatible')
    const refused = await runCli(['serve'], { API_KEYS: `ops:${key}`, PORT: '0', METRICS_PORT: '0' }, cwd)
    assert.equal(refused.status, 1)
    assert.equal(
      refused.stderr,
      `petstore serve: database schema version ${latest + 2} is newer than this release knows (${latest}) and needs a release made for schema ${latest + 2} or later\n`,
    )
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
    // Each CORS header it carries is one the document declares for the operation, for generated clients.
    const document = (await call(server, 'GET', '/v1/openapi.json')).json
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
