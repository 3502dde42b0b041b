import type { Redis } from 'ioredis'
import type { Logger } from 'pino'
import { MemoryWindowCounter } from '../admission/rate-limit/memory-counter.ts'
import { RedisWindowCounter } from '../admission/rate-limit/redis-counter.ts'
import type { AppOptions } from '../app.ts'
import type { Config } from '../config.ts'
import type { Metrics } from '../metrics/metrics.ts'
import type { Store } from '../store/store.ts'

// API keys counted in memory at once; beyond it the least recently seen key starts a new window.
const COUNTED_KEYS = 10_000
// Under the same keys as before the rate limit was ours, so instances of both versions count together.
const REDIS_PREFIX = 'petstore:rate-limit:'

/** What this process opened or made once: handed to the app, never made by it. */
export interface AppServices {
  store: Store
  logger: Logger
  metrics: Metrics
  /** Shared rate-limit counts (`REDIS_URL`); without it each instance counts alone. */
  redis?: Redis
  now?: () => number
}

/**
 * The app's options, from the configuration and the services: each part of the app gets its own group
 * of settings, and the rate limit its counter, chosen here (memory, or Redis when configured).
 */
export function appOptions(config: Config, services: AppServices): AppOptions {
  const { store, logger, metrics, redis, now = Date.now } = services
  const { perMinute } = config.rateLimit
  const counter = () =>
    redis ? new RedisWindowCounter(redis, REDIS_PREFIX) : new MemoryWindowCounter(COUNTED_KEYS, now)
  return {
    http: config.http,
    baseUrls: config.baseUrls,
    api: config.api,
    docs: config.docs,
    store,
    logger,
    metrics,
    now,
    ...(perMinute > 0 ? { rateLimit: { counter: counter(), perMinute } } : {}),
  }
}
