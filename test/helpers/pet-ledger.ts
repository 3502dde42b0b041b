import assert from 'node:assert/strict'
import { requesterFor, type ServeProcess } from './cli-process.ts'

export type PetLedger = ReturnType<typeof petLedger>

/**
 * Creates pets through a serve process and remembers every one acknowledged with a 201, so a test can
 * check after a fault and a restart that each is still there, byte for byte, and that nothing else is.
 */
export function petLedger(key: string) {
  const request = requesterFor(key)
  const acknowledged = new Map<string, string>()
  let sequence = 0

  return {
    acknowledged,
    /** One create; a 201 is recorded, anything else is returned for the test to judge. */
    async create(server: ServeProcess): Promise<Response> {
      const body = JSON.stringify({ name: `pet-${sequence++}`, categoryId: 7, status: 'available' })
      const response = await request(server, '/v1/pets', { method: 'POST', body })
      if (response.status === 201) {
        const text = await response.clone().text()
        acknowledged.set(String(JSON.parse(text).id), text)
      }
      return response
    },
    /** `count` creates one after another, each of which must be acknowledged. */
    async createAcknowledged(server: ServeProcess, count: number): Promise<void> {
      for (let i = 0; i < count; i++) assert.equal((await this.create(server)).status, 201)
    },
    /** Every acknowledged pet is served as it was acknowledged, and the catalogue holds nothing else. */
    async assertAllPresent(server: ServeProcess): Promise<void> {
      for (const [id, text] of acknowledged) {
        const response = await request(server, `/v1/pets/${id}`)
        assert.equal(response.status, 200, `acknowledged pet ${id} is there`)
        assert.equal(await response.text(), text)
      }
      const page = await request(server, '/v1/pets?limit=100')
      assert.equal(((await page.json()) as unknown[]).length, acknowledged.size, 'nothing unacknowledged')
    },
  }
}

/** A refusal while the store cannot take writes: 503 service_unavailable with Retry-After. */
export async function assertUnavailable(response: Response, what: string): Promise<void> {
  assert.equal(response.status, 503, `${what}: ${await response.clone().text()}`)
  assert.ok(response.headers.get('retry-after'), `${what}: Retry-After`)
  assert.equal(((await response.json()) as { code: string }).code, 'service_unavailable')
}
