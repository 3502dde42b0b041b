import { maxHeaderSize } from 'node:http'
import Fastify, { type FastifyInstance, LogController } from 'fastify'
import type { Logger } from 'pino'
import { admittedKeyName, decorateAdmittedKey } from './admission/admission.ts'
import { corsOfRouterErrors, registerCors } from './http/cors.ts'
import { decorateErrorCode, handleError, handleRouteNotFound } from './http/error-handler.ts'
import { parseJsonBody } from './http/json-body-parser.ts'
import { lazyLogger } from './http/lazy-logger.ts'
import { watchLoad } from './http/load-shedding.ts'
import { allowedAt, knowEveryMethod } from './http/method-guard.ts'
import { proxyTrust } from './http/proxy-trust.ts'
import { parseQuery } from './http/query-memo.ts'
import { handleClientError } from './http/raw-answers.ts'
import { rawRefusalRecorder } from './http/raw-refusals.ts'
import { requestIdOf } from './http/request-id.ts'
import { type AnswerRecorder, addRequestLifecycle } from './http/request-lifecycle.ts'
import { routerErrorHandler } from './http/router-errors.ts'
import { closeStalledSends } from './http/stalled-sends.ts'
import { createValidatorCompiler } from './http/validator-compiler.ts'
import { instrumentStore } from './metrics/instrumented-store.ts'
import type { Metrics } from './metrics/metrics.ts'
import { getPetDeprecation } from './pets/get-pet-deprecation.ts'
import { healthRoutes, PROBE_PATHS } from './routes/health.ts'
import { docsPage } from './routes/openapi/docs-page.ts'
import { type BaseUrls, openApi } from './routes/openapi/openapi.ts'
import { getPetEarlyHeaders } from './routes/pets/pet-routes.ts'
import { type RateLimit, type V1ApiSettings, v1Api } from './routes/v1-api.ts'
import { ErrorSchema } from './schemas/error.ts'
import { petSchemas } from './schemas/pet.ts'
import type { Store } from './store/store.ts'

/** Limits of the HTTP layer, and the browser origins allowed to call (CORS). */
export interface HttpSettings {
  bodyLimitBytes: number
  requestTimeoutMs: number
  headersTimeoutMs: number
  keepAliveTimeoutMs: number
  /** How long answer bytes may wait untaken (a client that stopped reading) before the connection closes. */
  sendTimeoutMs: number
  maxConnections: number
  /** Empty: CORS off. */
  corsOrigins: readonly string[]
  /** Peers whose X-Forwarded-For names the client (`request.ip`); empty: the socket's address is. */
  trustedProxies: readonly string[]
}

export interface AppOptions {
  http: HttpSettings
  baseUrls: BaseUrls
  api: V1ApiSettings
  /** Serve the interactive reference at /docs. */
  docs: boolean
  /** A migrated store; the caller opens and closes it. */
  store: Store
  /** The process logger. */
  logger: Logger
  /** Where the app's metrics go (served by the caller, if at all). */
  metrics: Metrics
  /** Counts requests per API key; none when rate limiting is off. */
  rateLimit?: RateLimit
  /** The clock (epoch milliseconds); tests move it to check expiry and sunset. */
  now?: () => number
}

// Any path parameter the request line can hold reaches its route, whose checks come after the key's: an
// unauthenticated caller gets 401 whatever the petId, and a caller with a key the int64 rule.
const MAX_PARAM_LENGTH = maxHeaderSize
// Where the API's operations are mounted: the major version of the interface (docs/versioning.md).
const API_PREFIX = '/v1'

/**
 * Builds the whole service, ready to `inject` or `listen`, and never listens itself: `server.ts` does.
 * Everything it depends on is given (by the composition root, cli/): the settings, the store (whose engine
 * the caller chose), the logger, the metrics registry, the rate-limit counter and the clock.
 */
export async function buildApp(options: AppOptions): Promise<FastifyInstance> {
  const { http, baseUrls, logger, metrics, now = Date.now } = options
  const store = instrumentStore(options.store, metrics)
  const recordRefusal = rawRefusalRecorder(logger, metrics)
  const getPet = getPetDeprecation({
    publicBaseUrl: baseUrls.publicBaseUrl,
    afterSunset: options.api.getPetAfterSunset,
  })
  const trustProxy = http.trustedProxies.length > 0 ? proxyTrust(http.trustedProxies) : false
  // The server the app makes, once made: a method the parser refuses is answered with its paths' Allow.
  let listening: object | undefined
  const setGetPetHeaders = getPetEarlyHeaders(getPet, API_PREFIX)
  // The request lifecycle's, once it is added below: the router's errors are raised only once serving.
  let recordWhenAnswered: AnswerRecorder | undefined
  const app = Fastify({
    // Its children, one per request, are made lazily (lazy-logger.ts).
    loggerInstance: lazyLogger(logger),
    genReqId: requestIdOf,
    // One line per request, written by our own onResponse hook (request-lifecycle.ts).
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: http.bodyLimitBytes,
    trustProxy,
    // Slow clients must not hold sockets forever: Node checks these every connectionsCheckingInterval.
    requestTimeout: http.requestTimeoutMs,
    keepAliveTimeout: http.keepAliveTimeoutMs,
    http: {
      // Given to Node too: it checks headersTimeout against requestTimeout before Fastify sets the latter.
      requestTimeout: http.requestTimeoutMs,
      headersTimeout: http.headersTimeoutMs,
      connectionsCheckingInterval: 1000,
      requireHostHeader: false,
      // A request without a body (every GET) starts ended: no stream to end and drain after its answer,
      // about 9 % of a get's instructions (docs/decisions.md, "Per-request cost"); see empty-body.ts.
      optimizeEmptyRequests: true,
    },
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH, querystringParser: parseQuery },
    // Answered by our own onRequest guard, in the Error body.
    return503OnClosing: false,
    clientErrorHandler: (error, socket) =>
      handleClientError(error, socket, recordRefusal, (path) =>
        listening === undefined ? undefined : allowedAt(listening, path),
      ),
    frameworkErrors: routerErrorHandler(
      setGetPetHeaders,
      corsOfRouterErrors(http.corsOrigins),
      (request, reply) => recordWhenAnswered?.(request, reply),
    ),
  })
  listening = app.server
  app.server.maxConnections = http.maxConnections
  const stopCheckingSends = closeStalledSends(app.server, http.sendTimeoutMs, logger)
  app.addHook('onClose', async () => stopCheckingSends())
  knowEveryMethod(app)

  const sharedSchemas = [...petSchemas, ErrorSchema]
  for (const schema of sharedSchemas) app.addSchema(schema)
  app.setValidatorCompiler(createValidatorCompiler(sharedSchemas))
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, parseJsonBody)
  app.setErrorHandler(handleError)
  app.setNotFoundHandler(handleRouteNotFound)

  // First: every answer, the lifecycle's own refusals included (the drain's 503), carries its CORS headers.
  await registerCors(app, { corsOrigins: http.corsOrigins })
  decorateAdmittedKey(app)
  decorateErrorCode(app)
  const lifecycle = addRequestLifecycle(app, {
    metrics,
    // Probes come every few seconds from each balancer: at info they would outnumber the requests served.
    quietOperations: PROBE_PATHS,
    keyNameOf: admittedKeyName,
    recordRefusal,
    trustsProxy: trustProxy !== false,
    setOperationHeaders: setGetPetHeaders,
  })
  recordWhenAnswered = lifecycle.recordWhenAnswered

  await app.register(openApi, { baseUrls })
  if (options.docs) await app.register(docsPage, { baseUrls })
  // Watched for the whole app: /v1 sheds while it says overloaded, and /readyz says not ready.
  const load = watchLoad(app, options.api)
  await app.register(healthRoutes, { store, load, metrics })
  await app.register(v1Api, {
    prefix: API_PREFIX,
    settings: options.api,
    publicBaseUrl: baseUrls.publicBaseUrl,
    getPetDeprecation: getPet,
    store,
    metrics,
    load,
    now,
    ...(options.rateLimit ? { rateLimit: options.rateLimit } : {}),
  })
  return app
}
