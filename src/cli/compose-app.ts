import type { FastifyInstance } from 'fastify'
import type { Logger } from 'pino'
import { MemoryWindowCounter } from '../admission/rate-limit/memory-counter.ts'
import type { RedisConnection } from '../admission/rate-limit/redis-connection.ts'
import type { RedisWindowCounter } from '../admission/rate-limit/redis-counter.ts'
import { type AppOptions, buildApp } from '../app.ts'
import type { Config } from '../config.ts'
import { createMetrics, gaugeBuildInfo, type Metrics } from '../metrics/metrics.ts'
import { API_VERSION } from '../routes/openapi/openapi.ts'
import type { Store } from '../store/store.ts'
import { releaseVersion } from './release.ts'

// API keys counted in memory at once; beyond it the least recently seen key starts a new window.
const COUNTED_KEYS = 10_000
// Under the same keys as before the rate limit was ours, so instances of both versions count together.
const REDIS_PREFIX = 'petstore:rate-limit:'

/** What this process opened or made once: handed to the app, never made by it. */
export interface AppServices {
  store: Store
  logger: Logger
  /** Made by composeApp when not given (a test gives its own to read it). */
  metrics?: Metrics
  /** Shared rate-limit counts (`REDIS_URL`); without it each process counts alone. */
  redis?: RedisConnection
  /**
   * A test's own clock (epoch milliseconds), for expiries, sunset and the in-memory rate limit, which
   * takes only its differences; otherwise the wall clock, and the rate limit the monotonic one.
   */
  now?: () => number
}

/**
 * The app as every command that builds one composes it (serve, openapi): the metrics registry is made here,
 * once, reading the store's pool, and returned for the caller to serve or share.
 */
export async function composeApp(
  config: Config,
  services: AppServices,
): Promise<{ app: FastifyInstance; metrics: Metrics }> {
  const { store } = services
  const metrics = services.metrics ?? madeMetrics(store)
  // Loaded only when Redis is configured, as its client library is (redis-connection.ts).
  const Counter = services.redis
    ? (await import('../admission/rate-limit/redis-counter.ts')).RedisWindowCounter
    : undefined
  const app = await buildApp(appOptions(config, { ...services, metrics }, Counter))
  return { app, metrics }
}

/** The service's metrics, with what runs named in them (`petstore_build_info`). */
function madeMetrics(store: Store): Metrics {
  const metrics = createMetrics(store.poolStats?.bind(store))
  gaugeBuildInfo(metrics.registry, { version: releaseVersion(), apiVersion: API_VERSION })
  return metrics
}

/**
 * The app's options, from the configuration and the services: each part of the app gets its own group
 * of settings, and the rate limit its counter, chosen here (memory, or Redis when configured).
 */
function appOptions(
  config: Config,
  services: AppServices & { metrics: Metrics },
  Counter: typeof RedisWindowCounter | undefined,
): AppOptions {
  const { store, logger, metrics, redis, now } = services
  const { perMinute } = config.rateLimit
  const counter = () =>
    redis && Counter ? new Counter(redis, REDIS_PREFIX, logger) : new MemoryWindowCounter(COUNTED_KEYS, now)
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
