import { once } from 'node:events'
import type { FastifyInstance } from 'fastify'
import { rateLimitPerKey } from '../admission/rate-limit/rate-limit.ts'
import type { WindowCounter } from '../admission/rate-limit/window-counter.ts'
import { createAuthenticator } from '../auth/authenticator.ts'
import { type LoadSheddingLimits, type LoadWatch, shedWhenOverloaded } from '../http/load-shedding.ts'
import type { Metrics } from '../metrics/metrics.ts'
import { runPeriodically } from '../periodic-job.ts'
import { watchCopies } from '../pets/copy-watch.ts'
import { DeprecatedCallCounter } from '../pets/deprecated-call-counter.ts'
import type { DeprecationPolicy } from '../pets/get-pet-deprecation.ts'
import { pageCursors } from '../pets/page-cursor.ts'
import { petCreator } from '../pets/pet-creator.ts'
import { petReader } from '../pets/pet-reader.ts'
import { ReadCache } from '../pets/read-cache.ts'
import type { Store } from '../store/store.ts'
import { petMethodGuards, petRoutes } from './pets/pet-routes.ts'

/** The settings of the versioned API: key lookups, the read cache, idempotency, getPet's sunset, overload. */
export interface V1ApiSettings extends LoadSheddingLimits {
  apiKeyCacheTtlMs: number
  readCacheBytes: number
  idempotencyRetentionMs: number
  getPetAfterSunset: DeprecationPolicy['afterSunset']
}

/** Requests allowed to each API key per minute, and where they are counted (this instance, or Redis). */
export interface RateLimit {
  counter: WindowCounter
  perMinute: number
}

export interface V1ApiOptions {
  settings: V1ApiSettings
  /** Where links point (`PUBLIC_BASE_URL`). */
  publicBaseUrl: string
  getPetDeprecation: DeprecationPolicy
  store: Store
  metrics: Metrics
  /** Whether to shed new requests (watched by the app, which /readyz also asks). */
  load: LoadWatch
  now: () => number
  /** None when rate limiting is off. */
  rateLimit?: RateLimit
}

// Deprecated-call counts reach the store this often; expired idempotency keys are purged this often.
const DEPRECATED_CALL_FLUSH_MS = 5000
const IDEMPOTENCY_PURGE_MS = 3_600_000
// The schema is read this often, probes or not: a newer release's migration this release may not write
// into is learnt within this time (as often as the 503 it then answers asks a client to retry).
const SCHEMA_CHECK_MS = 5000
const KEY_CACHE_ENTRIES = 10_000
const RATE_LIMIT_WINDOW_MS = 60_000

/** The versioned API, mounted at /v1, with what guards it (rate limits, load shedding) and its background jobs. */
export async function v1Api(app: FastifyInstance, options: V1ApiOptions) {
  const { settings, publicBaseUrl, store, metrics, now, rateLimit } = options
  shedWhenOverloaded(app, options.load)
  const limitRate =
    rateLimit &&
    rateLimitPerKey({
      counter: rateLimit.counter,
      max: rateLimit.perMinute,
      windowMs: RATE_LIMIT_WINDOW_MS,
      onUncounted: () => metrics.rateLimitUncounted.inc(),
    })

  const deprecatedCalls = new DeprecatedCallCounter(store, now, (key) =>
    metrics.countDeprecatedCall('getPet', key.name),
  )
  runPeriodically(
    app,
    'deprecated-call flush',
    {
      everyMs: DEPRECATED_CALL_FLUSH_MS,
      // The last write, at shutdown, fails when the store gives up on it as it closes (a PostgreSQL hung
      // past the stop's bound): what it held is lost, so it is said once, in one line (docs/decisions.md
      // "Shutdown").
      onLastRunFailed: (error) =>
        app.log.warn(
          { err: error, deprecatedCalls: deprecatedCalls.unwritten() },
          'deprecated-call counts not recorded at shutdown',
        ),
    },
    () => deprecatedCalls.flush(),
  )
  // The purge runs at start rather than at shutdown: frequent restarts never starve it, and it never holds
  // up a stop (a run in progress is stopped between two chunks).
  runPeriodically(
    app,
    'idempotency purge',
    { everyMs: IDEMPOTENCY_PURGE_MS, atStart: true, atClose: false },
    (signal) => store.purgeIdempotencyRecords(now(), signal),
  )

  const cache = new ReadCache(settings.readCacheBytes)
  let cursorSecret = await store.serviceSecret()
  const checkCopies = await watchCopies(store, cache, async () => {
    cursorSecret = await store.serviceSecret()
  })
  // Without probes (compose, systemd) or in a WORKERS worker no probe reaches, readiness would never read
  // the schema: every instance reads it itself, and the copy marks (pets/copy-watch.ts). A store it cannot
  // reach is said by what meets it; a read still waiting on a hung one is let go at close.
  runPeriodically(app, 'schema check', { everyMs: SCHEMA_CHECK_MS, atClose: false }, async (signal) => {
    const settled = new AbortController()
    const closing = once(signal, 'abort', { signal: settled.signal })
    const checks = Promise.all([store.schemaStatus(), checkCopies()]).catch(() => undefined)
    await Promise.race([checks, closing]).finally(() => settled.abort())
  })

  await app.register(petRoutes, {
    authenticate: createAuthenticator({
      store,
      cacheTtlMs: settings.apiKeyCacheTtlMs,
      cacheMaxEntries: KEY_CACHE_ENTRIES,
    }),
    createPet: petCreator({
      store,
      retentionMs: settings.idempotencyRetentionMs,
      now,
      onCreated: () => metrics.petsCreated.inc(),
    }),
    readPets: petReader({
      store,
      cursors: pageCursors(() => cursorSecret),
      cache,
      publicBaseUrl,
    }),
    ...(limitRate ? { limitRate } : {}),
    getPetDeprecation: options.getPetDeprecation,
    deprecatedCalls,
    publicBaseUrl,
    now,
  })
  await app.register(petMethodGuards)
}
