import assert from 'node:assert/strict'
import { once } from 'node:events'
import { describe, test } from 'node:test'
import type { Redis } from 'ioredis'
import { connectRedis } from '../src/admission/rate-limit/redis-connection.ts'
import { createLogger } from '../src/log/logger.ts'
import { call } from './helpers/api-client.ts'
import { redisSuiteOptions, startRedis } from './helpers/redis-server.ts'
import { sqliteEngine } from './helpers/store-engines.ts'
import { startTestServer } from './helpers/test-server.ts'

const log = createLogger({ level: 'silent' })

describe('rate limits shared through Redis', redisSuiteOptions(), () => {
  test('when two instances share Redis, then one key has one limit across both; when Redis goes away, requests are served (fail open); when it is back, the shared limit applies again', async (t) => {
    const redisServer = await startRedis()
    t.after(() => redisServer.stop())
    const { store, reopen } = await sqliteEngine.open(t)
    const clients: Redis[] = []
    const instance = async (instanceStore: typeof store, key?: string) => {
      const redis = await connectRedis(redisServer.url, log)
      clients.push(redis)
      t.after(() => redis.disconnect())
      await once(redis, 'ready')
      const env = { RATE_LIMIT_PER_MINUTE: '5' }
      return startTestServer(t, { store: instanceStore, env, app: { redis }, ...(key ? { key } : {}) })
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

    await redisServer.stop()
    const started = performance.now()
    for (const server of [a, b]) {
      const response = await call(server, 'GET', '/v1/pets', { key })
      assert.equal(response.status, 200, 'served uncounted while Redis is down')
      assert.equal(response.headers.get('ratelimit-remaining'), null, 'and no count is claimed')
    }
    assert.ok(performance.now() - started < 3000, 'no hang while Redis is down')

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
