import assert from 'node:assert/strict'
import { once } from 'node:events'
import { describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { Redis } from 'ioredis'
import { connectRedis } from '../src/admission/rate-limit/redis-connection.ts'
import { generateApiKey, storedFormOf } from '../src/auth/api-key.ts'
import { createLogger } from '../src/log/logger.ts'
import { createMetrics } from '../src/metrics/metrics.ts'
import { call } from './helpers/api-client.ts'
import { waitUntil, within } from './helpers/bounded-wait.ts'
import { countingIn, redisLoggingTo, serverLoggingTo } from './helpers/redis-rate-limit.ts'
import { connected, redisSuiteOptions, startRedis } from './helpers/redis-server.ts'
import { sqliteEngine } from './helpers/store-engines.ts'
import { startTestServer } from './helpers/test-server.ts'

/** The value of a metric without labels, as the registry serves it. */
async function metricValue(metrics: ReturnType<typeof createMetrics>, name: string): Promise<number> {
  const found = new RegExp(`^${name} (\\S+)$`, 'm').exec(await metrics.registry.metrics())
  assert.ok(found, `${name} is served`)
  return Number(found[1])
}

const log = createLogger({ level: 'silent' })

describe('rate limits shared through Redis', redisSuiteOptions(), () => {
  test('when two instances share Redis, then one key has one limit across both; when Redis goes away, requests are served (fail open); when it is back, the shared limit applies again', async (t) => {
    const redisServer = await startRedis()
    t.after(() => redisServer.stop())
    const { store, reopen } = await sqliteEngine.open(t)
    const clients: Redis[] = []
    const instance = async (instanceStore: typeof store, key?: string) => {
      const connection = await connectRedis(redisServer.url, log)
      const redis = connection.client
      clients.push(redis)
      t.after(() => redis.disconnect())
      // connectRedis resolves once connected, or a second later while still trying (a loaded machine).
      await connected(redis)
      const env = { RATE_LIMIT_PER_MINUTE: '5' }
      const metrics = createMetrics()
      const server = await startTestServer(t, {
        store: instanceStore,
        env,
        app: { redis: connection, metrics },
        ...(key ? { key } : {}),
      })
      return Object.assign(server, {
        uncounted: () => metricValue(metrics, 'petstore_rate_limit_uncounted_total'),
      })
    }
    // Two instances on the same data, so one API key is known to both.
    const a = await instance(store)
    const b = await instance(await reopen(), a.key)
    const key = a.key
    const alternating = async () => {
      const statuses = []
      for (const server of [a, b, a, b, a, b])
        statuses.push((await call(server, 'GET', '/v1/pets', { key })).status)
      return statuses
    }
    const statuses = await alternating()
    assert.deepEqual(statuses.slice(0, 5), [200, 200, 200, 200, 200])
    assert.equal(statuses[5], 429, 'the sixth request in the minute is refused, whichever instance gets it')
    assert.equal((await call(b, 'GET', '/v1/pets', { key })).json.code, 'rate_limited')
    assert.deepEqual([await a.uncounted(), await b.uncounted()], [0, 0], 'every request counted')

    // A key no instance has refused in this window (one that was stays refused: the next test).
    const fresh = generateApiKey()
    await store.createApiKey(storedFormOf('fresh', fresh))
    await redisServer.stop()
    const started = performance.now()
    for (const server of [a, b]) {
      const response = await call(server, 'GET', '/v1/pets', { key: fresh })
      assert.equal(response.status, 200, 'served uncounted while Redis is down')
      assert.equal(response.headers.get('ratelimit-remaining'), null, 'and no count is claimed')
    }
    assert.ok(performance.now() - started < 3000, 'no hang while Redis is down')
    assert.deepEqual(
      [await a.uncounted(), await b.uncounted()],
      [1, 1],
      'each uncounted request in the metrics',
    )

    // Back on the same port, empty: both clients reconnect on their own, within a few seconds, and count
    // together again.
    await redisServer.restart()
    await Promise.all(
      clients.map((redis) =>
        redis.status === 'ready' ? undefined : once(redis, 'ready', { signal: AbortSignal.timeout(5000) }),
      ),
    )
    assert.deepEqual(await alternating(), [200, 200, 200, 200, 200, 429], 'one shared limit again')
  })
})

describe('a key over its limit when Redis goes away', redisSuiteOptions(), () => {
  test('when a key was refused, and Redis restarts empty and counts it under its limit, then a later outage serves it uncounted: the refusal of the window Redis lost is forgotten', async (t) => {
    const redisServer = await startRedis()
    t.after(() => redisServer.stop())
    const server = await countingIn(t, redisServer.url, 3)
    const statuses = []
    for (let i = 0; i < 4; i++) statuses.push((await call(server, 'GET', '/v1/pets')).status)
    assert.deepEqual(statuses, [200, 200, 200, 429])
    await redisServer.stop()
    await redisServer.restart()
    await waitUntil(
      async () => (await call(server, 'GET', '/v1/pets')).headers.get('ratelimit-remaining') === '2',
      'counted anew by the restarted Redis',
      { everyMs: 100 },
    )
    await redisServer.stop()
    const served = await call(server, 'GET', '/v1/pets')
    assert.equal(served.status, 200, 'under its limit in the last window Redis counted')
    assert.equal(served.headers.get('ratelimit-remaining'), null, 'served uncounted')
  })

  test('when a key was refused in its window and Redis then goes away, then it stays refused until that window ends, while other keys are served uncounted', async (t) => {
    const redisServer = await startRedis()
    t.after(() => redisServer.stop())
    const server = await countingIn(t, redisServer.url, 3)
    const other = generateApiKey()
    await server.store.createApiKey(storedFormOf('other', other))
    const statuses = []
    for (let i = 0; i < 4; i++) statuses.push((await call(server, 'GET', '/v1/pets')).status)
    assert.deepEqual(statuses, [200, 200, 200, 429])

    await redisServer.stop()
    const refused = await call(server, 'GET', '/v1/pets')
    assert.equal(refused.status, 429, 'the outage does not lift its limit')
    assert.equal(refused.json.code, 'rate_limited')
    const retryAfter = Number(refused.headers.get('retry-after'))
    assert.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After: ${retryAfter}`)
    const served = await call(server, 'GET', '/v1/pets', { key: other })
    assert.equal(served.status, 200, 'a key under its limit is served, uncounted')
    assert.equal(served.headers.get('ratelimit-remaining'), null)
  })
})

describe('Redis outages in the log', redisSuiteOptions(), () => {
  test('when Redis goes away and comes back, then one line says it is unreachable (with the stack), one that it is reachable again, and nothing per reconnect attempt', async (t) => {
    const { redisServer, lines, redis } = await redisLoggingTo(t)
    let failedAttempts = 0
    redis.on('error', () => failedAttempts++)
    const outage = async () => {
      const before = failedAttempts
      await redisServer.stop()
      // Retries come 0.2, 0.4, 0.6 s… apart: four failed attempts are about two seconds of outage.
      await waitUntil(
        () => failedAttempts >= before + 4,
        () => `failed attempts: ${failedAttempts}`,
      )
    }
    const recovery = async () => {
      await redisServer.restart()
      await within(once(redis, 'ready'), 5000, 'reconnected to Redis')
    }

    await outage()
    assert.equal(lines.length, 1, `one line for the outage:\n${JSON.stringify(lines, null, 1)}`)
    const down = lines[0] as Record<string, unknown>
    assert.equal(down.level, 40)
    assert.equal(down.msg, 'Redis is unreachable: rate limits are not counted until it is back')
    assert.equal(typeof (down.err as { stack?: unknown } | undefined)?.stack, 'string', 'the stack, once')

    await recovery()
    assert.equal(lines.length, 2, JSON.stringify(lines, null, 1))
    const up = lines[1] as Record<string, unknown>
    assert.equal(up.level, 30)
    assert.equal(up.msg, 'Redis is reachable again: rate limits are counted')
    assert.equal(up.err, undefined)
    assert.ok(Number(up.downMs) >= 1000, `how long it was unreachable: ${up.downMs}`)

    // A second outage is a new one, reported again.
    await outage()
    await recovery()
    assert.deepEqual(
      lines.map((line) => line.level),
      [40, 30, 40, 30],
    )
  })
})

describe('a Redis connection dropped under load', redisSuiteOptions(), () => {
  test('when Redis drops the connection while counts are under way (a restart, CLIENT KILL), then they fail at once, served uncounted, and no line says Redis does not answer', async (t) => {
    const { redisServer, lines, redis, server } = await serverLoggingTo(t, 1000000)
    const killer = new Redis(redisServer.url)
    t.after(() => killer.disconnect())
    let loading = true
    const statuses: number[] = []
    const load = Array.from({ length: 8 }, async () => {
      while (loading) statuses.push((await call(server, 'GET', '/v1/pets')).status)
    })
    for (let kill = 0; kill < 3; kill++) {
      await sleep(300)
      await killer.call('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes')
      await connected(redis)
    }
    await sleep(1500)
    loading = false
    await Promise.all(load)
    assert.deepEqual([...new Set(statuses)], [200])
    const silent = lines.filter((line) => /does not answer/.test(String(line.msg)))
    assert.deepEqual(silent, [], 'a dropped connection is no silent Redis')
  })
})

describe('rate limits when Redis refuses to count', redisSuiteOptions(), () => {
  test('when Redis refuses the count (out of memory, a read-only replica), then requests are served uncounted, one line says why, and one when it counts again', async (t) => {
    const { lines, logger, redis, connection } = await redisLoggingTo(t)
    const server = await startTestServer(t, {
      env: { RATE_LIMIT_PER_MINUTE: '100' },
      app: { redis: connection, logger },
    })
    const redisLines = () =>
      lines.filter((line) => /Redis/.test(String(line.msg))).map((line) => [line.level, line.msg])
    const remaining = async () => {
      const response = await call(server, 'GET', '/v1/pets')
      assert.equal(response.status, 200, 'served whatever Redis says')
      return response.headers.get('ratelimit-remaining')
    }
    assert.equal(await remaining(), '99')
    const refusals: Array<[string, () => Promise<unknown>, () => Promise<unknown>]> = [
      ['OOM', () => redis.config('SET', 'maxmemory', '1'), () => redis.config('SET', 'maxmemory', '0')],
      // A failover that left the service on a replica: a master that is not there, so it stays one.
      [
        'READONLY',
        () => redis.call('REPLICAOF', '127.0.0.1', '1'),
        () => redis.call('REPLICAOF', 'NO', 'ONE'),
      ],
    ]
    for (const [reply, refuse, mend] of refusals) {
      await refuse()
      for (let i = 0; i < 5; i++) assert.equal(await remaining(), null, `${reply}: no count claimed`)
      await mend()
      assert.match(String(await remaining()), /^\d+$/, `${reply}: counted again`)
      const refused = lines.filter(
        (line) => line.msg === 'Redis refuses to count: rate limits are not counted until it does',
      )
      assert.match(String((refused.at(-1)?.err as { message?: string })?.message), new RegExp(`^${reply}`))
    }
    assert.deepEqual(redisLines(), [
      [40, 'Redis refuses to count: rate limits are not counted until it does'],
      [30, 'Redis counts again: rate limits are counted'],
      [40, 'Redis refuses to count: rate limits are not counted until it does'],
      [30, 'Redis counts again: rate limits are counted'],
    ])
  })
})

describe('a count in Redis set to outlast its window', redisSuiteOptions(), () => {
  test('when a key in Redis expires later than the window (written by hand, or by an instance with a longer window), then the answer promises at most the window and the key ends with it', async (t) => {
    const { redis, server } = await serverLoggingTo(t, 100)
    assert.equal((await call(server, 'GET', '/v1/pets')).headers.get('ratelimit-remaining'), '99')
    const [key, ...others] = await redis.keys('*')
    assert.ok(key !== undefined && others.length === 0, 'one key counted')
    await redis.pexpire(key, 3_000_000)
    const response = await call(server, 'GET', '/v1/pets')
    assert.equal(response.headers.get('ratelimit-remaining'), '98')
    const reset = Number(response.headers.get('ratelimit-reset'))
    assert.ok(reset >= 1 && reset <= 60, `RateLimit-Reset within the 60 s window: ${reset}`)
    assert.ok((await redis.pttl(key)) <= 60_000, 'and the key expires with the window')
  })
})

describe('a count in Redis that is no count', redisSuiteOptions(), () => {
  test('when a key in Redis holds a value that is no count (written by another application under the prefix), then the count starts again from it, expiring with the window, and no line says Redis refuses', async (t) => {
    const { redis, server, lines } = await serverLoggingTo(t, 100)
    assert.equal((await call(server, 'GET', '/v1/pets')).headers.get('ratelimit-remaining'), '99')
    const [key, ...others] = await redis.keys('*')
    assert.ok(key !== undefined && others.length === 0, 'one key counted')
    for (const [write, value] of [
      [() => redis.set(key, 'abc'), 'abc'],
      [() => redis.set(key, '9223372036854775807'), 'the largest integer, which INCR cannot pass'],
      [async () => (await redis.del(key)) + (await redis.rpush(key, 'x')), 'a list'],
    ] as const) {
      await write()
      const response = await call(server, 'GET', '/v1/pets')
      assert.equal(response.headers.get('ratelimit-remaining'), '99', `after ${value}: counted from 1`)
      assert.equal((await call(server, 'GET', '/v1/pets')).headers.get('ratelimit-remaining'), '98')
      const ttl = await redis.pttl(key)
      assert.ok(ttl > 0 && ttl <= 60_000, `after ${value}: it expires with the window (${ttl} ms)`)
    }
    assert.deepEqual(
      lines.filter((line) => /Redis/.test(String(line.msg))).map((line) => line.msg),
      [],
    )
  })
})
