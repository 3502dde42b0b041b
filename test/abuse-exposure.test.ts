import assert from 'node:assert/strict'
import { before, describe, test } from 'node:test'
import { answerKinds, ask, bearer, json, rawAnswer } from './helpers/abuse-cases.ts'
import { conformanceOf } from './helpers/api-client.ts'
import { waitUntil } from './helpers/bounded-wait.ts'
import { openSocket } from './helpers/raw-http.ts'
import { assertRoutesAreDocumented, recordRoutes } from './helpers/route-inventory.ts'
import { startTestServer, suiteCleanup, type TestServer } from './helpers/test-server.ts'
import { sendWire } from './helpers/wire-client.ts'

// OWASP API Security Top 10 (2023), API8, continued from abuse.test.ts (the other items are there):
// what any answer shows of the service.
describe('API8:2023 security misconfiguration: what the service exposes', () => {
  let server: TestServer
  const cleanup = suiteCleanup()
  before(async () => {
    server = await startTestServer(cleanup, { env: { DOCS: 'off' } })
  })
  const served = ['/v1/pets', '/v1/pets/1', '/v1/openapi.json', '/healthz', '/readyz']

  test('when any kind of answer is given (success, refusals, router and HTTP parser errors), then it names no server or framework', async () => {
    const requests = answerKinds(server.key, served)
    for (const [method, target, headers, body] of requests) {
      const reply = await sendWire(server.origin, { method, target, headers, ...(body ? { body } : {}) })
      const what = `${method} ${target} → ${reply.status}`
      assert.equal(reply.headers.get('server'), null, what)
      assert.equal(reply.headers.get('x-powered-by'), null, what)
      assert.doesNotMatch(reply.text, /fastify|node\.js|express/i, what)
    }
  })

  test('when TRACE or OPTIONS is sent to any route (CORS off), then 405 with Allow, and nothing of the request is echoed', async () => {
    for (const target of served) {
      for (const method of ['TRACE', 'OPTIONS']) {
        const reply = await ask(server, method, target, [['X-Echo', 'secret-marker'], bearer(server.key)])
        assert.equal(reply.status, 405, `${method} ${target}`)
        assert.match(reply.headers.get('allow') ?? '', /^GET, HEAD/)
        assert.doesNotMatch(reply.text, /secret-marker|psk_/)
      }
    }
  })

  test('when Host or X-Forwarded-Host names another site, then Location and Link never point there', async () => {
    // biome-ignore format: a table
    const spoofed: Array<[string, string]> = [['Host', 'evil.example'], ['X-Forwarded-Host', 'evil.example'],
      ['X-Forwarded-Proto', 'https'], bearer(server.key)]
    for (let i = 0; i < 3; i++) {
      const created = await ask(
        server,
        'POST',
        '/v1/pets',
        [...spoofed, json],
        `{"name":"p${i}","categoryId":1}`,
      )
      assert.doesNotMatch(created.headers.get('location') ?? '', /evil/)
    }
    const page = await ask(server, 'GET', '/v1/pets?limit=1', spoofed)
    assert.match(page.headers.get('link') ?? '', /rel="next"/)
    assert.doesNotMatch(page.headers.get('link') ?? '', /evil/)
  })

  for (const docs of ['off', 'on']) {
    test(`when DOCS=${docs}, then the routes Fastify registered are the document's operations, the probes and the document${docs === 'on' ? ' (and the docs page)' : ''}; other methods only answer 405`, async (t) => {
      const recorder = recordRoutes()
      recorder.start()
      const app = await startTestServer(t, { env: { DOCS: docs } }).finally(recorder.stop)
      await assertRoutesAreDocumented(app, recorder.routes, docs === 'on')
    })
  }

  test('when a request is answered before its body is read and the body framing then breaks, then there is still one answer', async () => {
    for (const framing of ['Transfer-Encoding: gzip\r\n\r\n', 'Transfer-Encoding: chunked\r\n\r\nzz\r\n']) {
      const raw = await rawAnswer(
        server.origin,
        `GET /nowhere HTTP/1.1\r\nHost: x\r\nConnection: close\r\n${framing}`,
      )
      assert.equal(raw.match(/HTTP\/1\.1 \d{3} /g)?.length, 1, `${JSON.stringify(framing)}: ${raw}`)
    }
  })

  test('when a request is answered before its body is read, its answer is sent, and the client then ends the connection mid-body, then it gets no second answer', async () => {
    const socket = await openSocket(server.origin)
    let text = ''
    socket.on('data', (chunk: Buffer) => {
      text += chunk
    })
    // No key: answered 401 at once, while the body is still on its way.
    socket.write(
      'POST /v1/pets HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"na',
    )
    await waitUntil(async () => text.includes('\r\n\r\n{'), 'the 401 never came')
    await new Promise((resolve) => setTimeout(resolve, 100))
    socket.end()
    await new Promise((resolve) => socket.once('close', resolve))
    assert.deepEqual(text.match(/HTTP\/1\.1 \d{3} /g), ['HTTP/1.1 401 '], text)
  })

  test('when Expect asks for the unknown or the headers are too large on an operation, then that status is declared for it', async () => {
    const conformance = await conformanceOf(server)
    for (const header of [
      ['Expect', 'teapot'] as [string, string],
      ['X-Big', 'a'.repeat(20_000)] as [string, string],
    ]) {
      const { status, headers, text } = await sendWire(server.origin, {
        method: 'GET',
        target: '/v1/pets',
        headers: [header],
      })
      conformance.check({ method: 'GET', path: '/v1/pets', status, headers, text })
    }
  })
})
