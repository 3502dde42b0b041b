import type { Redis } from 'ioredis'
import type { Logger } from 'pino'

/**
 * A Redis client for shared rate-limit counters, set to fail fast: no offline queue and one attempt per
 * command, so an unreachable Redis costs a request at most `connectTimeout`, never a hang; it reconnects
 * on its own in the background. The client library is loaded only when Redis is configured (it is a few
 * megabytes of memory that most single-instance deployments never need).
 */
export async function connectRedis(url: string, log: Pick<Logger, 'warn' | 'info'>): Promise<Redis> {
  const { Redis } = await import('ioredis')
  const redis = new Redis(url, {
    connectTimeout: 500,
    commandTimeout: 500,
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2000),
  })
  logOutages(redis, log)
  return redis
}

/**
 * One line when Redis becomes unreachable (with the error's stack) and one when it is back: the client
 * retries every 2 s at most for as long as an outage lasts, and a line per attempt says nothing new.
 */
function logOutages(redis: Redis, log: Pick<Logger, 'warn' | 'info'>): void {
  let downSince: number | undefined
  redis.on('error', (error: Error) => {
    if (downSince !== undefined) return
    downSince = performance.now()
    log.warn({ err: error }, 'Redis is unreachable: rate limits are not counted until it is back')
  })
  redis.on('ready', () => {
    if (downSince === undefined) return
    log.info(
      { downMs: Math.round(performance.now() - downSince) },
      'Redis is reachable again: rate limits are counted',
    )
    downSince = undefined
  })
}
