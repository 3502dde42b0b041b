import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { generateApiKey } from '../src/auth/api-key.ts'
import { temporaryDirectory } from './helpers/cleanup.ts'
import { requesterFor, startServeProcess, waitForLog } from './helpers/cli-process.ts'
import { createPets, scrapeSupervisor as scrape, servingWorkers } from './helpers/cluster-process.ts'

const key = generateApiKey()
const request = requesterFor(key)
const CREATED = 'petstore_pets_created_total'
const CREATE_COUNT = 'petstore_http_request_duration_seconds_count{operation="createPet",status="201"}'
const CREATE_BUCKET =
  'petstore_http_request_duration_seconds_bucket{le="+Inf",operation="createPet",status="201"}'

/** Whether a sample belongs to one of the service's counters or histograms, which must never fall. */
function isCumulative(sample: string): boolean {
  const name = sample.split('{')[0] as string
  return name.startsWith('petstore_') && /(_total|_count|_sum|_bucket)$/.test(name)
}

describe('summed metrics under WORKERS', () => {
  test('when a worker is killed and replaced, then the summed counters and histogram counts never decrease', async (t) => {
    const server = await startServeProcess({ API_KEYS: `ops:${key}`, WORKERS: '2' }, temporaryDirectory(t))
    t.after(() => server.child.kill('SIGKILL'))
    const [victim] = (await servingWorkers(server, 2)) as [number, number]
    await createPets(server, request, 200, 'a')
    const before = await scrape(server)
    assert.equal(before.get(CREATED), 200)
    assert.equal(before.get(CREATE_COUNT), 200)

    process.kill(victim, 'SIGKILL')
    await waitForLog(server, (lines) =>
      lines.find((line) => line.msg === 'a worker died; replacing it' && line.worker === victim),
    )
    const afterDeath = await scrape(server)
    await servingWorkers(server, 3)
    const afterReplacement = await scrape(server)
    await createPets(server, request, 50, 'b')
    const afterMore = await scrape(server)

    for (const [name, value] of before) {
      if (!isCumulative(name)) continue
      for (const [moment, later] of [
        ['after the death', afterDeath],
        ['after the replacement', afterReplacement],
        ['after more creates', afterMore],
      ] as const) {
        assert.ok((later.get(name) ?? 0) >= value, `${name} fell ${moment}: ${value} → ${later.get(name)}`)
      }
    }
    assert.equal(afterReplacement.get(CREATED), 200, 'the dead worker’s creates are still counted')
    assert.equal(afterMore.get(CREATED), 250)
    assert.equal(afterMore.get(CREATE_COUNT), 250)
    assert.equal(afterMore.get(CREATE_BUCKET), 250)
  })
})
