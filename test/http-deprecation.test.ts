import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { generateApiKey, storedFormOf } from '../src/auth/api-key.ts'
import { GET_PET_DEPRECATED_AT_MS, GET_PET_SUNSET_AT_MS } from '../src/pets/get-pet-deprecation.ts'
import { type ApiResponse, call } from './helpers/api-client.ts'
import { startTestServer } from './helpers/test-server.ts'

// RFC 9745 §2.1: Deprecation is an sf-date, "@" and integer seconds. RFC 8594 §3: Sunset is an HTTP-date
// (IMF-fixdate, RFC 9110 §5.6.7). RFC 8288: a link is "<URI>" followed by parameters.
const SF_DATE = /^@-?\d{1,15}$/
const IMF_FIXDATE =
  /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d{2}:\d{2}:\d{2} GMT$/

function assertDeprecationHeaders(response: ApiResponse) {
  const deprecation = response.headers.get('deprecation') ?? ''
  assert.match(deprecation, SF_DATE)
  assert.equal(Number(deprecation.slice(1)) * 1000, GET_PET_DEPRECATED_AT_MS)
  const sunset = response.headers.get('sunset') ?? ''
  assert.match(sunset, IMF_FIXDATE)
  assert.equal(sunset, 'Thu, 05 Dec 2030 00:00:00 GMT')
  assert.match(
    response.headers.get('link') ?? '',
    /^<(https?:\/\/[^/>]+)?\/v1\/pets>; rel="successor-version"$/,
  )
}

describe('getPet deprecation', () => {
  test('when getPet answers anything — 200, 404, 400 (an undecodable path or query too), 401 — then it carries Deprecation, Sunset and a successor Link', async (t) => {
    const server = await startTestServer(t)
    const { json: pet } = await call(server, 'POST', '/v1/pets', { body: { name: 'Old', categoryId: 1 } })
    const responses = [
      await call(server, 'GET', `/v1/pets/${pet.id}`),
      await call(server, 'GET', '/v1/pets/999999'),
      await call(server, 'GET', '/v1/pets/abc'),
      await call(server, 'GET', '/v1/pets/%zz'),
      await call(server, 'GET', `/v1/pets/${pet.id}?%zz`),
      await call(server, 'GET', `/v1/pets/${pet.id}?a=%G1`),
      await call(server, 'GET', `/v1/pets/${pet.id}`, { key: false }),
    ]
    assert.deepEqual(
      responses.map((response) => response.status),
      [200, 404, 400, 400, 400, 400, 401],
    )
    for (const response of responses) assertDeprecationHeaders(response)
    assert.equal(
      (await call(server, 'GET', '/v1/pets')).headers.get('deprecation'),
      null,
      'listPets is not deprecated',
    )
  })

  test("when getPet's target is too long to read (414, refused in the request's head), then it carries none of getPet's headers, and the document declares none there", async (t) => {
    const server = await startTestServer(t)
    const tooLong = await call(server, 'GET', `/v1/pets/1?x=${'a'.repeat(9000)}`)
    assert.equal(tooLong.status, 414)
    assert.deepEqual(
      ['deprecation', 'sunset', 'link'].filter((name) => tooLong.headers.has(name)),
      [],
    )
    const { json: document } = await call(server, 'GET', '/v1/openapi.json')
    const declared = Object.keys(document.paths['/pets/{petId}'].get.responses['414'].headers)
    assert.deepEqual(
      declared.filter((name) => ['Deprecation', 'Sunset', 'Link'].includes(name)),
      [],
    )
  })

  test('when keys call getPet, then the calls are counted per key and recorded when the app stops', async (t) => {
    let clock = Date.UTC(2027, 0, 1)
    const server = await startTestServer(t, { app: { now: () => clock } })
    const other = generateApiKey()
    await server.store.createApiKey(storedFormOf('other', other))
    for (let i = 0; i < 3; i++) await call(server, 'GET', '/v1/pets/1')
    clock += 60_000
    await call(server, 'GET', '/v1/pets/1', { key: other })
    await call(server, 'GET', '/v1/pets/1', { key: false })
    await call(server, 'GET', '/v1/pets')
    await server.app.close()
    const keys = await server.store.listApiKeys()
    const byName = Object.fromEntries(keys.map((key) => [key.name, key]))
    assert.equal(byName.test?.deprecatedCalls, 3)
    assert.equal(byName.test?.lastDeprecatedCallAt, '2027-01-01T00:00:00.000Z')
    assert.equal(byName.other?.deprecatedCalls, 1)
    assert.equal(byName.other?.lastDeprecatedCallAt, '2027-01-01T00:01:00.000Z')
  })

  test('when the sunset has come and GET_PET_AFTER_SUNSET=gone, then getPet is 410 gone from the moment Sunset names; by default it keeps serving', async (t) => {
    const afterSunset = () => GET_PET_SUNSET_AT_MS + 1
    const gone = await startTestServer(t, {
      env: { GET_PET_AFTER_SUNSET: 'gone' },
      app: { now: () => GET_PET_SUNSET_AT_MS },
    })
    const response = await call(gone, 'GET', '/v1/pets/1')
    assert.equal(response.status, 410)
    assert.equal(response.json.code, 'gone')
    assert.match(response.json.message, /use GET \/pets with a status filter/)
    assertDeprecationHeaders(response)

    const serving = await startTestServer(t, { app: { now: afterSunset } })
    const { json: pet } = await call(serving, 'POST', '/v1/pets', { body: { name: 'Late', categoryId: 1 } })
    assert.equal((await call(serving, 'GET', `/v1/pets/${pet.id}`)).status, 200)

    const before = await startTestServer(t, {
      env: { GET_PET_AFTER_SUNSET: 'gone' },
      app: { now: () => GET_PET_SUNSET_AT_MS - 1 },
    })
    assert.equal((await call(before, 'GET', '/v1/pets/1')).status, 404, 'until the sunset it still serves')
  })
})
