import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { operationOf } from '../http/request-logging.ts'
import type { Metrics } from './metrics.ts'

/** Times every request by operation and status, and counts the 401s. */
export function addHttpMetrics(app: FastifyInstance, metrics: Metrics): void {
  app.addHook('onResponse', async (request: FastifyRequest, reply: FastifyReply) => {
    const status = String(reply.statusCode)
    metrics.requestDuration.observe({ operation: operationOf(request), status }, reply.elapsedTime / 1000)
    if (reply.statusCode === 401) metrics.unauthorized.inc()
  })
}
