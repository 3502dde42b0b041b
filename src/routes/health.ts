import type { FastifyInstance } from 'fastify'
import Type from 'typebox'
import { ApiError, SchemaMissingError, serviceUnavailable } from '../errors.ts'
import { logReady } from '../http/condition-log.ts'
import type { LoadWatch } from '../http/load-shedding.ts'
import { guardMethods } from '../http/method-guard.ts'
import { gaugeReadiness, type Metrics } from '../metrics/metrics.ts'
import { incompatibility, type SchemaStatus, type Store, type StoreHealth } from '../store/store.ts'

// Under the 1 s a probe waits by default (Kubernetes' timeoutSeconds): a store that does not answer (a
// frozen database: up to its own 8 s bound) is a 503 saying so, not a probe that times out saying nothing.
const STORE_CHECK_BOUND_MS = 900
const STORE_SILENT = () =>
  serviceUnavailable(`not ready: the store did not answer within ${STORE_CHECK_BOUND_MS / 1000} s`)

const hidden = { hide: true, response: { 200: Type.Object({ status: Type.String() }) } }

/** The probes' paths, which are their operations in the request log (written at debug: see app.ts). */
export const PROBE_PATHS: ReadonlySet<string> = new Set(['/healthz', '/readyz'])

/**
 * What /readyz checks, in order, as a function that resolves to the store's schema status when the
 * instance is ready and throws the 503 saying why when it is not: not stopping, not shedding, the store
 * answering within its bound, writable, at a schema this release runs on.
 */
function readinessCheck(app: FastifyInstance, store: Store, load: LoadWatch): () => Promise<SchemaStatus> {
  return async () => {
    // Told before the listener closes (SHUTDOWN_DELAY_MS), so the balancer stops sending here first.
    if (app.stopAnnounced()) throw serviceUnavailable('not ready: the service is stopping')
    // Ready means served: while /v1 sheds, the balancer is told to send elsewhere.
    if (load.overloaded) throw serviceUnavailable('not ready: the service is overloaded')
    let schema: SchemaStatus
    let health: StoreHealth
    let bound: NodeJS.Timeout | undefined
    const unanswered = new Promise<never>((_, reject) => {
      bound = setTimeout(() => reject(STORE_SILENT()), STORE_CHECK_BOUND_MS)
    })
    try {
      ;[schema, health] = await Promise.race([
        Promise.all([store.schemaStatus(), store.health()]),
        unanswered,
      ])
    } catch (error) {
      if (error instanceof ApiError) throw error
      // Probes come every few seconds for as long as an outage lasts: the error handler logs the store's
      // error once per condition (condition-log.ts), not once per probe. A missing schema is said as such
      // (its words name no table): the store answers.
      const why = error instanceof SchemaMissingError ? error.message : 'the store cannot be reached'
      throw serviceUnavailable(`not ready: ${why}`, { cause: error })
    } finally {
      clearTimeout(bound)
    }
    // The store logged the fault once; this says which, without detail, to whoever asks.
    if (!health.writable) throw serviceUnavailable(`not ready: ${health.reason}`)
    if (schema.current < schema.latest) {
      throw serviceUnavailable(
        `not ready: database schema ${schema.current}, this release needs ${schema.latest}`,
        { retryAfterS: 5 },
      )
    }
    // A newer release migrated (its first instance, or a pipeline's `migrate`). Its migrations say whether
    // this release still runs on the result: if so, this instance serves on until replaced rather than
    // leave a rolling deploy with no ready instance of the old release (docs/versioning.md, "Storage").
    const refused = incompatibility(schema)
    if (refused !== undefined) throw serviceUnavailable(`not ready: ${refused}`, { retryAfterS: 5 })
    return schema
  }
}

/**
 * Probes for orchestrators, outside /v1, with no key and no data. `/healthz`: the process answers. `/readyz`:
 * not shedding load or shutting down, and the store answers, takes writes and has a schema this release
 * runs on; else 503 in the Error body (docs/decisions.md, "Readiness follows the last fault").
 */
export async function healthRoutes(
  app: FastifyInstance,
  { store, load, metrics }: { store: Store; load: LoadWatch; metrics?: Metrics },
) {
  app.get('/healthz', { schema: hidden }, async () => ({ status: 'ok' }))

  const checkReadiness = readinessCheck(app, store, load)
  let newerSchemaSaid = false
  app.get('/readyz', { schema: hidden }, async (request) => {
    const schema = await checkReadiness()
    if (schema.current > schema.latest && !newerSchemaSaid) {
      newerSchemaSaid = true
      request.log.warn(
        { schema: schema.current, release: schema.latest, compatibleFrom: schema.compatibleFrom },
        'the database schema is newer than this release, and compatible with it: serving until replaced',
      )
    }
    logReady(request)
    return { status: 'ready' }
  })
  // For alerts where nothing probes /readyz (systemd, compose): its answer, taken at each scrape.
  if (metrics !== undefined) {
    gaugeReadiness(metrics.registry, () =>
      checkReadiness().then(
        () => true,
        () => false,
      ),
    )
  }

  guardMethods(app, '/healthz', ['GET', 'HEAD'])
  guardMethods(app, '/readyz', ['GET', 'HEAD'])
}
