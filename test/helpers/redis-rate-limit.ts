import type { TestContext } from 'node:test'
import pino from 'pino'
import { connectRedis } from '../../src/admission/rate-limit/redis-connection.ts'
import { createLogger } from '../../src/log/logger.ts'
import { connected, startRedis } from './redis-server.ts'
import { startTestServer } from './test-server.ts'

const log = createLogger({ level: 'silent' })

/** A throwaway Redis and a client connected to it, whose log (and any given the same logger) is kept in `lines`. */
export async function redisLoggingTo(t: TestContext) {
  const redisServer = await startRedis()
  t.after(() => redisServer.stop())
  const lines: Array<Record<string, unknown>> = []
  const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) })
  const connection = await connectRedis(redisServer.url, logger)
  const redis = connection.client
  t.after(() => redis.disconnect())
  // connectRedis resolves once connected, or a second later while still trying (a loaded machine).
  await connected(redis)
  return { redisServer, lines, logger, redis, connection }
}

/** A throwaway Redis, and a test server counting rate limits (`perMinute`) in it, logging to `lines`. */
export async function serverLoggingTo(t: TestContext, perMinute: number) {
  const { redisServer, lines, logger, redis, connection } = await redisLoggingTo(t)
  const server = await startTestServer(t, {
    env: { RATE_LIMIT_PER_MINUTE: String(perMinute) },
    app: { redis: connection, logger },
  })
  return { redisServer, lines, redis, server }
}

/** A test server counting rate limits (`perMinute`) in the Redis at `url`; its client closed after the test. */
export async function countingIn(t: TestContext, url: string, perMinute: number) {
  const connection = await connectRedis(url, log)
  t.after(() => connection.client.disconnect())
  // connectRedis resolves once connected, or a second later while still trying (a loaded machine).
  await connected(connection.client)
  return startTestServer(t, { env: { RATE_LIMIT_PER_MINUTE: String(perMinute) }, app: { redis: connection } })
}
