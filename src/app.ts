import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify'
import type { Logger } from 'pino'
import { createAuthenticator } from './auth/authenticator.ts'
import type { Config } from './config.ts'
import { handleClientError, handleError, handleRouteNotFound } from './http/error-handler.ts'
import { parseJsonBody } from './http/json-body-parser.ts'
import { openApi } from './http/openapi.ts'
import { pageCursors } from './http/page-cursor.ts'
import { runPeriodically } from './http/periodic-job.ts'
import { addRequestGuards } from './http/request-guards.ts'
import { createValidatorCompiler } from './http/validator-compiler.ts'
import { createLogger } from './logger.ts'
import { DeprecatedCallTally } from './pets/deprecated-call-tally.ts'
import { getPetDeprecation } from './pets/get-pet-deprecation.ts'
import { petCreator } from './pets/pet-creator.ts'
import { petMethodGuards, petRoutes } from './routes/pets.ts'
import { ErrorSchema } from './schemas/error.ts'
import { petSchemas } from './schemas/pet.ts'
import type { Store } from './store/store.ts'

export interface AppDependencies {
  config: Config
  store: Store
  /** The process logger; by default one is made from the config (`LOG_LEVEL`). */
  logger?: Logger
  /** The clock (epoch milliseconds); tests move it to check expiry and sunset. */
  now?: () => number
}

// Deprecated-call counts reach the store this often; expired idempotency keys are purged this often.
const TALLY_FLUSH_MS = 5000
const IDEMPOTENCY_PURGE_MS = 3_600_000

// Longest path parameter read; a petId is at most 20 characters, so anything longer is refused early.
const MAX_PARAM_LENGTH = 100

/**
 * Builds the whole service, ready to `inject` or `listen`, and never listens itself: `server.ts` does.
 * The store is given, not opened here, so callers choose the engine and own its life cycle.
 */
export async function buildApp({
  config,
  store,
  logger,
  now = Date.now,
}: AppDependencies): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: (logger ?? createLogger(config)) as FastifyBaseLogger,
    bodyLimit: config.BODY_LIMIT_BYTES,
    // Slow clients must not hold sockets forever: Node checks these every connectionsCheckingInterval.
    requestTimeout: config.REQUEST_TIMEOUT_MS,
    keepAliveTimeout: config.KEEP_ALIVE_TIMEOUT_MS,
    http: {
      headersTimeout: config.HEADERS_TIMEOUT_MS,
      connectionsCheckingInterval: 1000,
      requireHostHeader: false,
    },
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    // Answered by our own onRequest hook below, in the Error body.
    return503OnClosing: false,
    clientErrorHandler: handleClientError,
    frameworkErrors: handleError,
  })

  const sharedSchemas = [...petSchemas, ErrorSchema]
  for (const schema of sharedSchemas) app.addSchema(schema)
  app.setValidatorCompiler(createValidatorCompiler(sharedSchemas))
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, parseJsonBody)
  app.setErrorHandler(handleError)
  app.setNotFoundHandler(handleRouteNotFound)

  addRequestGuards(app)

  await app.register(openApi, { config })
  const authenticate = createAuthenticator({
    store,
    cacheTtlMs: config.API_KEY_CACHE_TTL_MS,
    cacheMaxEntries: 10_000,
  })
  const deprecatedCalls = new DeprecatedCallTally(store, now)
  runPeriodically(app, 'deprecated-call tally', TALLY_FLUSH_MS, () => deprecatedCalls.flush())
  runPeriodically(app, 'idempotency purge', IDEMPOTENCY_PURGE_MS, () => store.purgeIdempotencyKeys(now()))
  await app.register(petRoutes, {
    prefix: '/v1',
    store,
    authenticate,
    createPet: petCreator({ store, retentionMs: config.IDEMPOTENCY_RETENTION_S * 1000, now }),
    cursors: pageCursors(await store.serviceSecret()),
    getPetDeprecation: getPetDeprecation(config),
    deprecatedCalls,
    publicBaseUrl: config.PUBLIC_BASE_URL,
    now,
  })
  await app.register(petMethodGuards, { prefix: '/v1' })
  return app
}
