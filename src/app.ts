import Fastify, {
  type FastifyBaseLogger,
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  LogController,
} from 'fastify'
import type { Redis } from 'ioredis'
import type { Logger } from 'pino'
import type { Config } from './config.ts'
import { registerCors } from './http/cors.ts'
import { deprecationHeaders } from './http/deprecation.ts'
import { docsPage } from './http/docs-page.ts'
import { handleClientError, handleError, handleRouteNotFound } from './http/error-handler.ts'
import { parseJsonBody } from './http/json-body-parser.ts'
import { openApi } from './http/openapi.ts'
import { addRequestLifecycle, setCommonHeaders } from './http/request-lifecycle.ts'
import { requestLoggerFactory } from './http/request-logger.ts'
import { requestIdOf } from './http/request-logging.ts'
import { createValidatorCompiler } from './http/validator-compiler.ts'
import { createLogger } from './logger.ts'
import { instrumentStore } from './metrics/instrumented-store.ts'
import { createMetrics, type Metrics } from './metrics/metrics.ts'
import { getPetDeprecation } from './pets/get-pet-deprecation.ts'
import { healthRoutes } from './routes/health.ts'
import { v1Api } from './routes/v1-api.ts'
import { ErrorSchema } from './schemas/error.ts'
import { petSchemas } from './schemas/pet.ts'
import type { Store } from './store/store.ts'

export interface AppDependencies {
  config: Config
  /** A migrated store; the caller opens and closes it. */
  store: Store
  /** The process logger; by default one is made from the config (`LOG_LEVEL`). */
  logger?: Logger
  /** Where the app's metrics go; by default a registry of its own (served by the caller, if at all). */
  metrics?: Metrics
  /** Shared rate-limit counters (`REDIS_URL`); without it, limits are counted in memory. */
  redis?: Redis
  /** The clock (epoch milliseconds); tests move it to check expiry and sunset. */
  now?: () => number
}

// A getPet path, as far as a path the router could not even parse can be recognised.
const GET_PET_PATH = /^\/v1\/pets\/[^/?]+(\?|$)/

/**
 * Errors the router raises before any route (or its hooks) runs: an over-long or badly encoded petId is
 * still a getPet call, so its answer carries getPet's deprecation headers like every other.
 */
function routerErrorHandler(config: Config) {
  const getPetHeaders = deprecationHeaders(getPetDeprecation(config))
  return (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    // No hook runs for these, so the headers every answer carries are set here.
    setCommonHeaders(request, reply)
    if ((request.method === 'GET' || request.method === 'HEAD') && GET_PET_PATH.test(request.url)) {
      reply.headers(getPetHeaders)
    }
    handleError(error, request, reply)
  }
}

// Longest path parameter read; a petId is at most 20 characters, so anything longer is refused early.
const MAX_PARAM_LENGTH = 100

/**
 * Builds the whole service, ready to `inject` or `listen`, and never listens itself: `server.ts` does.
 * Everything it depends on is given: the store (whose engine the caller chose), the logger, the metrics
 * registry, Redis and the clock.
 */
export async function buildApp(dependencies: AppDependencies): Promise<FastifyInstance> {
  const { config, logger, redis, now = Date.now } = dependencies
  const metrics =
    dependencies.metrics ?? createMetrics(dependencies.store.poolStats?.bind(dependencies.store))
  const store = instrumentStore(dependencies.store, metrics)
  const app = Fastify({
    loggerInstance: (logger ?? createLogger(config)) as FastifyBaseLogger,
    genReqId: requestIdOf,
    childLoggerFactory: requestLoggerFactory,
    // One line per request, written by our own onResponse hook (request-logging.ts).
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: config.BODY_LIMIT_BYTES,
    // Slow clients must not hold sockets forever: Node checks these every connectionsCheckingInterval.
    requestTimeout: config.REQUEST_TIMEOUT_MS,
    keepAliveTimeout: config.KEEP_ALIVE_TIMEOUT_MS,
    http: {
      // Given to Node too: it checks headersTimeout against requestTimeout before Fastify sets the latter.
      requestTimeout: config.REQUEST_TIMEOUT_MS,
      headersTimeout: config.HEADERS_TIMEOUT_MS,
      connectionsCheckingInterval: 1000,
      requireHostHeader: false,
    },
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    // Answered by our own onRequest guard, in the Error body.
    return503OnClosing: false,
    clientErrorHandler: handleClientError,
    frameworkErrors: routerErrorHandler(config),
  })
  app.server.maxConnections = config.MAX_CONNECTIONS
  app.decorateRequest('apiKey', null)

  const sharedSchemas = [...petSchemas, ErrorSchema]
  for (const schema of sharedSchemas) app.addSchema(schema)
  app.setValidatorCompiler(createValidatorCompiler(sharedSchemas))
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, parseJsonBody)
  app.setErrorHandler(handleError)
  app.setNotFoundHandler(handleRouteNotFound)

  const corsOrigins = config.CORS_ORIGINS.split(',')
    .map((origin) => origin.trim())
    .filter(Boolean)
  await registerCors(app, { corsOrigins })
  addRequestLifecycle(app, metrics)

  await app.register(openApi, { config })
  if (config.DOCS === 'on') await app.register(docsPage, { config })
  await app.register(healthRoutes, { store })
  await app.register(v1Api, { prefix: '/v1', config, store, metrics, now, ...(redis ? { redis } : {}) })
  return app
}
