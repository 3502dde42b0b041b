import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { runSoak, type SoakResult, soakViolations } from '../scripts/soak.ts'

// Short in CI (60 s by default); `npm run soak -- --duration 3600` is the long run.
const SECONDS = Number(process.env.SOAK_SECONDS ?? 60)

describe('soak', () => {
  test(`when the service takes a steady mixed load for ${SECONDS} s, then there are no errors and memory, open files and the WAL stay bounded`, {
    timeout: (SECONDS + 60) * 1000,
  }, async (t) => {
    const result = await runSoak({
      durationS: SECONDS,
      rate: 400,
      warmupS: Math.round(SECONDS / 4),
      sampleEveryS: 2,
    })
    const { growth } = result
    t.diagnostic(
      `${result.requests} requests, ${result.errors} errors, ${result.shed} shed, statuses ${JSON.stringify(result.statuses)}; growth after warm-up: heap floor ${growth.heapFloorMiB.toFixed(2)} MiB, rss ${growth.rssMiB.toFixed(1)} MiB, files ${growth.openFiles}, wal ${growth.walMiB.toFixed(2)} MiB, live heap ${growth.liveHeapMiB?.toFixed(2) ?? 'n/a'} MiB (${result.majorGcs.length} full GCs)`,
    )
    assert.ok(result.requests >= SECONDS * 300, `only ${result.requests} requests were made`)
    assert.deepEqual(soakViolations(result), [])
  })

  // A busy machine stalls the service now and then; it sheds what arrives just after (MAX_EVENT_LOOP_DELAY_MS),
  // and the soak's client must ride that out as any client would, or the soak fails on the machine's load.
  test('when the service stalls now and then for longer than MAX_EVENT_LOOP_DELAY_MS under the soak, then the requests it sheds are retried after Retry-After and none is lost', {
    timeout: 60_000,
  }, async (t) => {
    const result = await runSoak({
      durationS: 10,
      rate: 400,
      warmupS: 2,
      sampleEveryS: 1,
      pause: { everyS: 3, forS: 1.5 },
    })
    t.diagnostic(
      `${result.requests} requests, ${result.shed} shed, statuses ${JSON.stringify(result.statuses)}`,
    )
    assert.ok(result.shed > 0, 'the stall made the service shed nothing')
    assert.deepEqual(result.failures, {})
    assert.equal(result.errors, 0)
  })

  test("when more than 1 % of a soak's requests were shed, or any was lost, then the soak fails, naming how many and which", () => {
    const growth = { heapFloorMiB: 0, rssMiB: 0, openFiles: 0, walMiB: 0 }
    const options = { durationS: 1, rate: 1, warmupS: 0, sampleEveryS: 1 }
    const clean = {
      options,
      requests: 1000,
      errors: 0,
      failures: {},
      shed: 10,
      statuses: {},
      samples: [],
      majorGcs: [],
      growth,
    }
    const result = (changes: Partial<SoakResult>): SoakResult => ({ ...clean, ...changes })
    assert.deepEqual(soakViolations(result({})), [])
    assert.deepEqual(soakViolations(result({ shed: 11 })), ['11 of 1000 requests shed (bound 1 %)'])
    assert.deepEqual(
      soakViolations(
        result({ errors: 3, failures: { 'GET /v1/pets/{id} → 500': 1, 'POST /v1/pets → TimeoutError': 2 } }),
      ),
      ['3 errors: 1 × GET /v1/pets/{id} → 500, 2 × POST /v1/pets → TimeoutError'],
    )
  })
})
