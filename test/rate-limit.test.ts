import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Redis } from 'ioredis'
import pino from 'pino'
import { MemoryWindowCounter } from '../src/admission/rate-limit/memory-counter.ts'
import { connectRedis } from '../src/admission/rate-limit/redis-connection.ts'
import { RedisWindowCounter } from '../src/admission/rate-limit/redis-counter.ts'
import type { WindowCounter } from '../src/admission/rate-limit/window-counter.ts'
import { generateApiKey, storedFormOf } from '../src/auth/api-key.ts'
import { createLogger } from '../src/log/logger.ts'
import { call } from './helpers/api-client.ts'
import type { Cleanup } from './helpers/cleanup.ts'
import { connected, redisSuiteOptions, startRedis } from './helpers/redis-server.ts'
import { startTestServer } from './helpers/test-server.ts'

// Short, for the test that lets a window run out; the others count in a long one, which a stalled host
// cannot see expire between their round trips.
const WINDOW_MS = 300
const LONG_WINDOW_MS = 60_000
const silent = createLogger({ level: 'silent' })

interface CounterUnderTest {
  counter: WindowCounter
  /** Lets the current windows run out. */
  pass(ms: number): Promise<void>
}

/** The same behaviour, whichever engine keeps the counts. */
function counterContract(name: string, open: (t: Cleanup) => Promise<CounterUnderTest>, options = {}) {
  describe(`rate-limit counter: ${name}`, options, () => {
    test('when one key is counted repeatedly in its window, then counts rise by one and the reset time stays within the window', async (t) => {
      const { counter } = await open(t)
      const counts = []
      for (let i = 0; i < 4; i++) {
        const window = await counter.increment('key:1', LONG_WINDOW_MS)
        counts.push(window.count)
        assert.ok(
          window.resetInMs > 0 && window.resetInMs <= LONG_WINDOW_MS,
          `reset in ${window.resetInMs} ms`,
        )
      }
      assert.deepEqual(counts, [1, 2, 3, 4])
    })

    test('when two keys are counted, then each has a count of its own', async (t) => {
      const { counter } = await open(t)
      await counter.increment('key:1', LONG_WINDOW_MS)
      await counter.increment('key:1', LONG_WINDOW_MS)
      assert.equal((await counter.increment('key:2', LONG_WINDOW_MS)).count, 1)
      assert.equal((await counter.increment('key:1', LONG_WINDOW_MS)).count, 3)
    })

    test('when a window has run out, then the next request starts a new one at 1', async (t) => {
      const { counter, pass } = await open(t)
      await counter.increment('key:1', WINDOW_MS)
      await counter.increment('key:1', WINDOW_MS)
      await pass(WINDOW_MS + 50)
      const window = await counter.increment('key:1', WINDOW_MS)
      assert.equal(window.count, 1)
      assert.ok(window.resetInMs > WINDOW_MS - 100, 'a whole window ahead')
    })
  })
}

counterContract('in memory', async () => {
  let now = 1_000_000
  return {
    counter: new MemoryWindowCounter(100, () => now),
    pass: async (ms) => {
      now += ms
    },
  }
})

counterContract(
  'Redis',
  async (t) => {
    const server = await startRedis()
    t.after(() => server.stop())
    const connection = await connectRedis(server.url, silent)
    const redis = connection.client
    t.after(() => redis.disconnect())
    // connectRedis resolves once connected, or a second later while still trying (a loaded machine).
    await connected(redis)
    return {
      counter: new RedisWindowCounter(connection, `test:${Math.random()}:`, silent),
      pass: (ms) => sleep(ms),
    }
  },
  redisSuiteOptions(),
)

describe('rate limit in Redis', redisSuiteOptions(), () => {
  test('when a count was left without an expiry (PERSIST, a restore, an older release), then the next request gives it one', async (t) => {
    const server = await startRedis()
    t.after(() => server.stop())
    const connection = await connectRedis(server.url, silent)
    const redis = connection.client
    t.after(() => redis.disconnect())
    // connectRedis resolves once connected, or a second later while still trying (a loaded machine).
    await connected(redis)
    const prefix = `test:${Math.random()}:`
    await redis.set(`${prefix}key:1`, '7')
    // A minute, as the service counts: a short window could end before the test reads it on a busy machine.
    const minute = 60_000
    const window = await new RedisWindowCounter(connection, prefix, silent).increment('key:1', minute)
    assert.equal(window.count, 8)
    assert.ok(window.resetInMs > 0 && window.resetInMs <= minute, `reset in ${window.resetInMs} ms`)
    const ttl = await redis.pttl(`${prefix}key:1`)
    assert.ok(ttl > 0 && ttl <= minute, `the key expires in ${ttl} ms`)
  })
})

describe('a Redis answer that is no count', () => {
  test('when Redis (or something between) answers the count with something other than a count and a time left, then requests are served without RateLimit fields, one warn line says so, and one info line when it counts again', async (t) => {
    let answer: unknown
    // Stands in for the client: whatever `answer` holds is what the counter's script returns.
    const redis = {
      defineCommand(name: string) {
        Object.assign(this, { [name]: async () => answer })
      },
    } as unknown as Redis
    // Its replies in step throughout: no probe is asked for.
    const steps = { outOfStepSince: undefined, probe: () => undefined, counted: () => {} }
    const lines: Array<Record<string, unknown>> = []
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) })
    const server = await startTestServer(t, {
      env: { RATE_LIMIT_PER_MINUTE: '100' },
      app: { redis: { client: redis, steps, silence: { since: undefined } }, logger },
    })
    const redisLines = () =>
      lines.filter((line) => /Redis/.test(String(line.msg))).map((line) => [line.level, line.msg])
    for (const noCount of [[1, 'abc'], [1], 'OK', null, [Number.NaN, 100], [0, 100], [1, -1], [1.5, 100]]) {
      answer = noCount
      const response = await call(server, 'GET', '/v1/pets')
      assert.equal(response.status, 200, JSON.stringify(noCount))
      for (const field of ['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset'])
        assert.equal(response.headers.get(field), null, `${JSON.stringify(noCount)}: no ${field}`)
    }
    answer = [3, 59_500]
    const counted = await call(server, 'GET', '/v1/pets')
    assert.equal(counted.headers.get('ratelimit-remaining'), '97')
    assert.equal(counted.headers.get('ratelimit-reset'), '60')
    assert.deepEqual(redisLines(), [
      [40, 'Redis answers no count: rate limits are not counted until it does'],
      [30, 'Redis counts again: rate limits are counted'],
    ])
  })
})

describe('rate limit in memory', () => {
  test('when more keys are counted than the bound, then the least recently counted is forgotten first', () => {
    const counter = new MemoryWindowCounter(2, () => 0)
    counter.increment('a', WINDOW_MS)
    counter.increment('b', WINDOW_MS)
    counter.increment('a', WINDOW_MS)
    counter.increment('c', WINDOW_MS)
    assert.equal(counter.increment('a', WINDOW_MS).count, 3, 'a was counted recently and is kept')
    assert.equal(counter.increment('b', WINDOW_MS).count, 1, 'b was dropped and starts again')
  })

  test('when a window starts at a clock reading whose sum with the window rounds up, then its reset is still the whole window, never a second more', () => {
    // 62481.50220224624 + 60000 − 62481.50220224624 is 60000.00000000001 in floating point: RateLimit-Reset 61.
    const counter = new MemoryWindowCounter(10, () => 62481.50220224624)
    assert.equal(counter.increment('key:1', 60_000).resetInMs, 60_000)
  })

  test('when the wall clock steps back ten minutes, then a window still ends when its time has passed', async (t) => {
    t.mock.timers.enable({ apis: ['Date'], now: Date.now() })
    const counter = new MemoryWindowCounter(10)
    counter.increment('key:1', WINDOW_MS)
    assert.equal(counter.increment('key:1', WINDOW_MS).count, 2)
    t.mock.timers.setTime(Date.now() - 600_000)
    await sleep(WINDOW_MS + 50)
    const window = counter.increment('key:1', WINDOW_MS)
    assert.equal(window.count, 1, 'a new window')
    assert.ok(window.resetInMs > 0 && window.resetInMs <= WINDOW_MS, `reset in ${window.resetInMs} ms`)
  })

  test('when two keys take turns, then each is counted against its own allowance', async (t) => {
    const server = await startTestServer(t, { env: { RATE_LIMIT_PER_MINUTE: '3' } })
    const other = generateApiKey()
    await server.store.createApiKey(storedFormOf('other', other))
    const answers = []
    for (let turn = 0; turn < 4; turn++) {
      for (const key of [server.key, other]) {
        const response = await call(server, 'GET', '/v1/pets', { key })
        answers.push(`${response.status} ${response.headers.get('ratelimit-remaining')}`)
      }
    }
    assert.deepEqual(answers, ['200 2', '200 2', '200 1', '200 1', '200 0', '200 0', '429 0', '429 0'])
  })

  test('when a key was refused with 429 and its minute passes, then it is served again with a full allowance', async (t) => {
    let now = Date.parse('2026-01-01T00:00:00Z')
    const server = await startTestServer(t, { env: { RATE_LIMIT_PER_MINUTE: '2' }, app: { now: () => now } })
    assert.deepEqual(
      [(await call(server, 'GET', '/v1/pets')).status, (await call(server, 'GET', '/v1/pets')).status],
      [200, 200],
    )
    now += 30_600
    const limited = await call(server, 'GET', '/v1/pets')
    assert.equal(limited.status, 429)
    assert.equal(limited.headers.get('retry-after'), '30', "the window's 29.4 s left, rounded up")
    assert.equal(limited.headers.get('ratelimit-reset'), '30')
    assert.equal(limited.headers.get('ratelimit-remaining'), '0')
    now += 29_400
    const served = await call(server, 'GET', '/v1/pets')
    assert.equal(served.status, 200)
    assert.equal(served.headers.get('ratelimit-remaining'), '1')
    assert.equal(served.headers.get('ratelimit-reset'), '60')
  })
})
