import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { createMetrics } from '../src/metrics/metrics.ts'

async function deprecatedCalls(metrics: ReturnType<typeof createMetrics>): Promise<Record<string, number>> {
  const { values } = await metrics.deprecatedCalls.get()
  return Object.fromEntries(values.map(({ labels, value }) => [`${labels.operation} ${labels.key}`, value]))
}

describe('metrics', () => {
  test('when deprecated calls are counted between reads, then each read shows every call so far, by operation and key', async () => {
    const metrics = createMetrics()
    for (let i = 0; i < 3; i++) metrics.countDeprecatedCall('getPet', 'a')
    metrics.countDeprecatedCall('getPet', 'b')
    assert.deepEqual(await deprecatedCalls(metrics), { 'getPet a': 3, 'getPet b': 1 })
    metrics.countDeprecatedCall('getPet', 'a')
    metrics.countDeprecatedCall('oldOp', 'a')
    assert.deepEqual(await deprecatedCalls(metrics), { 'getPet a': 4, 'getPet b': 1, 'oldOp a': 1 })
    const text = await metrics.registry.metrics()
    assert.match(text, /petstore_deprecated_calls_total\{operation="getPet",key="a"\} 4/)
  })
})
