import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { runSoak, soakViolations } from '../scripts/soak.ts'

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
      `${result.requests} requests, ${result.errors} errors; growth after warm-up: heap floor ${growth.heapFloorMiB.toFixed(2)} MiB, rss ${growth.rssMiB.toFixed(1)} MiB, files ${growth.openFiles}, wal ${growth.walMiB.toFixed(2)} MiB, live heap ${growth.liveHeapMiB?.toFixed(2) ?? 'n/a'} MiB (${result.majorGcs.length} full GCs)`,
    )
    assert.ok(result.requests >= SECONDS * 300, `only ${result.requests} requests were made`)
    assert.deepEqual(soakViolations(result), [])
  })
})
