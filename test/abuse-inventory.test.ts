import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, test } from 'node:test'
import { ask, bearer, json } from './helpers/abuse-cases.ts'
import { startTestServer } from './helpers/test-server.ts'
import type { WireResponse } from './helpers/wire-client.ts'

// OWASP API Security Top 10 (2023), API9 (abuse.test.ts holds the others).

// Covered elsewhere: openapi.test.ts (getPet deprecated: true, its description names 5 December 2030 and the
// replacement; listPets is not deprecated); http-deprecation.test.ts (Deprecation, Sunset and the successor
// Link on getPet's 200, 404, 400, 401 and 410; calls counted per key); http-errors.test.ts (/v2 is 404).

describe('API9:2023 improper inventory management: the deprecated getPet is flagged everywhere', () => {
  const SUNSET = 'Thu, 05 Dec 2030 00:00:00 GMT'
  const assertFlagged = (reply: WireResponse, what: string) => {
    assert.match(reply.headers.get('deprecation') ?? '', /^@\d+$/, `${what}: Deprecation`)
    assert.equal(reply.headers.get('sunset'), SUNSET, `${what}: Sunset`)
    assert.match(reply.headers.get('link') ?? '', /rel="successor-version"/, `${what}: Link`)
  }

  test('when getPet answers HEAD, a 304 or a 429, then those answers carry Deprecation, Sunset and the successor Link too', async (t) => {
    const server = await startTestServer(t, { env: { RATE_LIMIT_PER_MINUTE: '4' } })
    const key = bearer(server.key)
    const created = await ask(server, 'POST', '/v1/pets', [key, json], '{"name":"Old","categoryId":1}')
    const target = `/v1/pets/${JSON.parse(created.text).id}`
    const head = await ask(server, 'HEAD', target, [key])
    const notModified = await ask(server, 'GET', target, [
      key,
      ['If-None-Match', head.headers.get('etag') ?? ''],
    ])
    await ask(server, 'GET', target, [key])
    const limited = await ask(server, 'GET', target, [key])
    assert.deepEqual([head.status, notModified.status, limited.status], [200, 304, 429])
    for (const [what, reply] of Object.entries({ head, notModified, limited })) assertFlagged(reply, what)
  })

  test('when the router itself refuses a getPet path (over-long id, broken percent-encoding), then the answer is flagged too', async (t) => {
    const server = await startTestServer(t)
    for (const petId of ['9'.repeat(150), '%E0%A4%A']) {
      const reply = await ask(server, 'GET', `/v1/pets/${petId}`, [bearer(server.key)])
      assert.equal(reply.status, 400)
      assertFlagged(reply, petId.slice(0, 10))
    }
  })

  test('when the README is read, then it flags getPet as deprecated with its removal date, replacement and headers', () => {
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8')
    assert.match(readme, /getPet.{0,20}deprecated/)
    assert.match(readme, /5 December 2030/)
    assert.match(readme, /listPets with a status filter|GET \/pets with a status filter/)
    assert.match(readme, /Deprecation: @\d+/)
    assert.match(readme, new RegExp(`Sunset: ${SUNSET}`))
  })
})
