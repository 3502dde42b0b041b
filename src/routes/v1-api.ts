import type { FastifyInstance } from 'fastify'
import type { Redis } from 'ioredis'
import { createAuthenticator } from '../auth/authenticator.ts'
import type { Config } from '../config.ts'
import { registerLoadShedding } from '../http/load-shedding.ts'
import { pageCursors } from '../http/page-cursor.ts'
import { runPeriodically } from '../http/periodic-job.ts'
import { rateLimitPerKey } from '../http/rate-limit.ts'
import type { Metrics } from '../metrics/metrics.ts'
import { DeprecatedCallTally } from '../pets/deprecated-call-tally.ts'
import { getPetDeprecation } from '../pets/get-pet-deprecation.ts'
import { petCreator } from '../pets/pet-creator.ts'
import { petReader } from '../pets/pet-reader.ts'
import { ReadCache } from '../pets/read-cache.ts'
import { MemoryWindowCounter } from '../rate-limit/memory-counter.ts'
import { RedisWindowCounter } from '../rate-limit/redis-counter.ts'
import type { Store } from '../store/store.ts'
import { petMethodGuards, petRoutes } from './pets.ts'

export interface V1ApiOptions {
  config: Config
  store: Store
  metrics: Metrics
  now: () => number
  redis?: Redis
}

// Deprecated-call counts reach the store this often; expired idempotency keys are purged this often.
const TALLY_FLUSH_MS = 5000
const IDEMPOTENCY_PURGE_MS = 3_600_000
const KEY_CACHE_ENTRIES = 10_000
const RATE_LIMIT_WINDOW_MS = 60_000

/** The versioned API, mounted at /v1, with what guards it (rate limits, load shedding) and its background jobs. */
export async function v1Api(app: FastifyInstance, { config, store, metrics, now, redis }: V1ApiOptions) {
  registerLoadShedding(app, { config })
  // Counted per API key: by this instance alone, or with REDIS_URL by every instance together.
  const limitRate =
    config.RATE_LIMIT_PER_MINUTE === 0
      ? undefined
      : rateLimitPerKey({
          counter: redis
            ? new RedisWindowCounter(redis, 'petstore:rate-limit:')
            : new MemoryWindowCounter(KEY_CACHE_ENTRIES, now),
          max: config.RATE_LIMIT_PER_MINUTE,
          windowMs: RATE_LIMIT_WINDOW_MS,
        })

  const deprecatedCalls = new DeprecatedCallTally(store, now, (key) =>
    metrics.countDeprecatedCall('getPet', key.name),
  )
  runPeriodically(app, 'deprecated-call tally', { everyMs: TALLY_FLUSH_MS }, () => deprecatedCalls.flush())
  // The purge runs at start rather than at shutdown: frequent restarts never starve it, and it never holds
  // up a stop (a run in progress is stopped between two chunks).
  runPeriodically(
    app,
    'idempotency purge',
    { everyMs: IDEMPOTENCY_PURGE_MS, atStart: true, atClose: false },
    (signal) => store.purgeIdempotencyKeys(now(), signal),
  )

  await app.register(petRoutes, {
    authenticate: createAuthenticator({
      store,
      cacheTtlMs: config.API_KEY_CACHE_TTL_MS,
      cacheMaxEntries: KEY_CACHE_ENTRIES,
    }),
    createPet: petCreator({
      store,
      retentionMs: config.IDEMPOTENCY_RETENTION_S * 1000,
      now,
      onCreated: () => metrics.petsCreated.inc(),
    }),
    readPets: petReader({
      store,
      cursors: pageCursors(await store.serviceSecret()),
      cache: new ReadCache(config.READ_CACHE_BYTES),
      publicBaseUrl: config.PUBLIC_BASE_URL,
    }),
    ...(limitRate ? { limitRate } : {}),
    getPetDeprecation: getPetDeprecation(config),
    deprecatedCalls,
    publicBaseUrl: config.PUBLIC_BASE_URL,
    now,
  })
  await app.register(petMethodGuards)
}
