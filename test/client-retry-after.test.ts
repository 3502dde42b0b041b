import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { createClient } from '../packages/client/src/index.ts'
import { clientOnServer, rejection } from './helpers/client-on-server.ts'

/** A client whose every call is answered with `status` and these headers, and an Error body. */
function answeredWith(status: number, headers: Record<string, string>) {
  return createClient({
    baseUrl: 'http://127.0.0.1:9/v1',
    apiKey: 'psk_unused',
    fetch: async () =>
      Response.json({ code: 'service_unavailable', message: 'try later', status }, { status, headers }),
  })
}

describe('typed client: when to try again', () => {
  test('when the rate limit refuses a call, then the PetStoreError says in retryAfterMs what Retry-After says, in milliseconds', async (t) => {
    const { client } = await clientOnServer(t, { env: { RATE_LIMIT_PER_MINUTE: '1' } })
    await client.listPets()
    const error = await rejection(client.listPets())
    assert.equal(error.code, 'rate_limited')
    const seconds = Number(error.response.headers.get('retry-after'))
    assert.ok(seconds >= 1 && seconds <= 60, `Retry-After ${seconds}`)
    assert.equal(error.retryAfterMs, seconds * 1000)
    assert.equal(JSON.parse(JSON.stringify(error)).retryAfterMs, seconds * 1000, 'and its JSON says it')
  })

  test('when an answer carries no Retry-After, then retryAfterMs is undefined, and its JSON has none', async (t) => {
    const { client } = await clientOnServer(t, { apiKey: `psk_${'A'.repeat(43)}` })
    const error = await rejection(client.listPets())
    assert.equal(error.retryAfterMs, undefined)
    assert.equal('retryAfterMs' in JSON.parse(JSON.stringify(error)), false)
  })

  test("when a proxy's Retry-After is a date, then retryAfterMs is the time until it; a date past, 0; a value that is neither, undefined", async () => {
    const inThirty = new Date(Date.now() + 30_000).toUTCString()
    const later = await rejection(answeredWith(503, { 'retry-after': inThirty }).listPets())
    assert.ok(
      later.retryAfterMs !== undefined && later.retryAfterMs > 25_000 && later.retryAfterMs <= 30_000,
      `${later.retryAfterMs}`,
    )
    const past = await rejection(
      answeredWith(503, { 'retry-after': 'Thu, 01 Jan 2015 00:00:00 GMT' }).listPets(),
    )
    assert.equal(past.retryAfterMs, 0)
    for (const value of ['soon', '-1', '1.5', '']) {
      const error = await rejection(answeredWith(503, { 'retry-after': value }).listPets())
      assert.equal(error.retryAfterMs, undefined, `Retry-After "${value}"`)
    }
  })

  test("when a proxy's Retry-After is a date in asctime's form (no zone: GMT, RFC 9110), then retryAfterMs is the time until it, on a machine whose time zone is not GMT", async (t) => {
    const zone = process.env.TZ
    process.env.TZ = 'America/New_York'
    t.after(() => {
      if (zone === undefined) delete process.env.TZ
      else process.env.TZ = zone
    })
    // `Sun Nov  6 08:49:37 1994`: day, month, day of the month padded to 2, time, year.
    const at = new Date(Date.now() + 3_600_000)
    const [day, , month, year, time] = at.toUTCString().replace(',', '').split(' ')
    const asctime = `${day} ${month} ${String(at.getUTCDate()).padStart(2, ' ')} ${time} ${year}`
    const error = await rejection(answeredWith(503, { 'retry-after': asctime }).listPets())
    assert.ok(
      error.retryAfterMs !== undefined && error.retryAfterMs > 3_590_000 && error.retryAfterMs <= 3_600_000,
      `Retry-After "${asctime}": ${error.retryAfterMs} ms`,
    )
  })
})
