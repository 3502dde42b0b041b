import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { AggregatorRegistry, Histogram, Registry } from 'prom-client'
import { ConfigSchema } from '../src/config-schema.ts'
import { DurationHistogram } from '../src/metrics/duration-histogram.ts'
import { createMetrics } from '../src/metrics/metrics.ts'
import { SqliteStore } from '../src/store/sqlite/sqlite-store.ts'
import { failingStore } from './helpers/abuse-cases.ts'
import { call } from './helpers/api-client.ts'
import { startTestServer } from './helpers/test-server.ts'

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

  test("when durations are observed, then the histogram reads exactly as prom-client's own Histogram, as text and as JSON for cluster aggregation", async () => {
    const options = {
      name: 'request_seconds',
      help: 'Durations.',
      labelNames: ['operation', 'status'] as const,
      buckets: [0.001, 0.01, 0.1],
    }
    const ours = new Registry()
    const theirs = new Registry()
    const histogram = new DurationHistogram({ ...options, registers: [ours] })
    const reference = new Histogram({ ...options, registers: [theirs] })
    const observations: Array<[string, string, number]> = [
      ['getPet', '200', 0.0004],
      ['getPet', '200', 0.001], // on a bound: counted in that bucket
      ['getPet', '200', 0.05],
      ['getPet', '404', 0.2], // above every bound: +Inf only
      ['listPets', '200', 0.002],
    ]
    for (const [operation, status, seconds] of observations) {
      histogram.labels({ operation, status }).observe(seconds)
      reference.labels({ operation, status }).observe(seconds)
    }
    assert.equal(await ours.metrics(), await theirs.metrics())
    // As workers send it to the primary (JSON); prom-client's exemplar slots are empty here.
    const wire = (json: unknown) =>
      JSON.parse(JSON.stringify(json, (key, value) => (key === 'exemplar' ? undefined : value)))
    assert.deepEqual(wire(await ours.getMetricsAsJSON()), wire(await theirs.getMetricsAsJSON()))
    const merged = await AggregatorRegistry.aggregate([
      await ours.getMetricsAsJSON(),
      await ours.getMetricsAsJSON(),
    ]).metrics()
    assert.match(merged, /request_seconds_count\{operation="getPet",status="200"\} 6/, 'two workers add up')
    ours.resetMetrics()
    theirs.resetMetrics()
    assert.doesNotMatch(
      await ours.metrics(),
      /request_seconds_count\{[^}]*\} [1-9]/,
      'reset starts again from zero',
    )
  })

  test('when an answer takes as long as the default bounds allow (a PostgreSQL call: connect + statement + 1 s), then the duration histograms still place it below +Inf', async (t) => {
    const { PG_CONNECT_TIMEOUT_MS, PG_STATEMENT_TIMEOUT_MS } = ConfigSchema.properties
    const defaultOf = (setting: object) => (setting as { default: number }).default
    const longestSeconds =
      (defaultOf(PG_CONNECT_TIMEOUT_MS) + defaultOf(PG_STATEMENT_TIMEOUT_MS) + 1000) / 1000
    const metrics = createMetrics()
    const server = await startTestServer(t, { app: { metrics } })
    assert.equal((await call(server, 'GET', '/v1/pets')).status, 200)
    const text = await metrics.registry.metrics()
    for (const name of ['petstore_http_request_duration_seconds', 'petstore_store_duration_seconds']) {
      const bounds = [...text.matchAll(new RegExp(`^${name}_bucket\\{le="([\\d.]+)"`, 'gm'))].map((match) =>
        Number(match[1]),
      )
      assert.ok(Math.max(...bounds) >= longestSeconds, `${name}: buckets end at ${Math.max(...bounds)} s`)
    }
  })

  test('when reads are answered from the cache in a fraction of a millisecond, then both duration histograms tell apart times from 0.1 ms on, each bucket at most 2.5 times the one before', async (t) => {
    const metrics = createMetrics()
    const server = await startTestServer(t, { app: { metrics } })
    assert.equal((await call(server, 'GET', '/v1/pets')).status, 200)
    const text = await metrics.registry.metrics()
    for (const name of ['petstore_http_request_duration_seconds', 'petstore_store_duration_seconds']) {
      const first = new RegExp(`^${name}_bucket\\{le="([\\d.]+)",operation="listPets"`, 'gm')
      const bounds = [...text.matchAll(first)].map((match) => Number(match[1]))
      assert.equal(bounds[0], 0.0001, `${name}: the first bucket`)
      for (let i = 1; i < bounds.length; i++) {
        const ratio = (bounds[i] as number) / (bounds[i - 1] as number)
        assert.ok(ratio <= 2.5, `${name}: ${bounds[i - 1]} s, then ${bounds[i]} s`)
      }
    }
  })

  test('when store calls succeed and fail, then each is timed under its operation and outcome', async (t) => {
    const metrics = createMetrics()
    const store = failingStore('createPet', new Error('disk I/O error'))
    const server = await startTestServer(t, { store, app: { metrics } })
    for (let i = 0; i < 2; i++) {
      assert.equal(
        (await call(server, 'POST', '/v1/pets', { body: { name: 'Rex', categoryId: 1 } })).status,
        500,
      )
    }
    assert.equal((await call(server, 'GET', '/v1/pets')).status, 200)
    const text = await metrics.registry.metrics()
    const count = (labels: string) =>
      Number(new RegExp(`^petstore_store_duration_seconds_count\\{${labels}\\} (\\d+)$`, 'm').exec(text)?.[1])
    assert.equal(count('operation="createPet",outcome="error"'), 2)
    assert.equal(count('operation="listPets",outcome="ok"'), 1)
    assert.ok(count('operation="findActiveApiKeys",outcome="ok"') >= 1)
    assert.match(
      text,
      /petstore_store_duration_seconds_bucket\{le="0.0001",operation="createPet",outcome="error"\} \d/,
    )
    assert.doesNotMatch(text, /operation="createPet",outcome="ok"/)
  })

  test('when a store call takes 300 ms, then both duration histograms count it in seconds: about 0.3 in their sums', async (t) => {
    const metrics = createMetrics()
    const slow = new Proxy(new SqliteStore({ path: ':memory:', busyTimeoutMs: 100 }), {
      get(target, property, receiver) {
        const value = Reflect.get(target, property, receiver)
        if (typeof value !== 'function') return value
        if (property !== 'listPets') return value.bind(target)
        return async (...args: unknown[]) => {
          await sleep(300)
          return value.apply(target, args)
        }
      },
    })
    const server = await startTestServer(t, { store: slow, app: { metrics } })
    assert.equal((await call(server, 'GET', '/v1/pets')).status, 200)
    const text = await metrics.registry.metrics()
    for (const series of [
      'petstore_store_duration_seconds_sum{operation="listPets",outcome="ok"}',
      'petstore_http_request_duration_seconds_sum{operation="listPets",status="200"}',
    ]) {
      const line = text.split('\n').find((sample) => sample.startsWith(`${series} `))
      const seconds = Number(line?.slice(series.length + 1))
      // A loaded host may add to the wait, never take from it.
      assert.ok(seconds >= 0.25 && seconds < 10, `${series}: ${line}`)
    }
  })

  test('when the instance is ready, then petstore_ready reads 1; when /readyz would answer 503 (the store cannot be reached), then 0', async (t) => {
    const ready = createMetrics()
    await startTestServer(t, { app: { metrics: ready } })
    assert.match(await ready.registry.metrics(), /^petstore_ready 1$/m)

    const down = createMetrics()
    const server = await startTestServer(t, {
      store: failingStore('health', new Error('connect ECONNREFUSED')),
      app: { metrics: down },
    })
    assert.equal((await call(server, 'GET', '/readyz')).status, 503)
    assert.match(await down.registry.metrics(), /^petstore_ready 0$/m)
  })
})
