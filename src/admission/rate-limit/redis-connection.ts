import type { Redis } from 'ioredis'
import type { Logger } from 'pino'

/**
 * A Redis client for shared rate-limit counters, set to fail fast: no offline queue and one attempt per
 * command, so an unreachable Redis costs a request at most `connectTimeout`, never a hang; it reconnects
 * on its own in the background. The client library is loaded only when Redis is configured (it is a few
 * megabytes of memory that most single-instance deployments never need).
 */
export async function connectRedis(url: string, log: Pick<Logger, 'warn'>): Promise<Redis> {
  const { Redis } = await import('ioredis')
  const redis = new Redis(url, {
    connectTimeout: 500,
    commandTimeout: 500,
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2000),
  })
  redis.on('error', (error: Error) =>
    log.warn({ err: error }, 'Redis is unreachable: rate limits are not counted'),
  )
  return redis
}
