import { randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { maskApiKeys } from '../auth/api-key.ts'

// A client's own request id is kept if it is short and plain; anything else is replaced, never logged as is.
const CLIENT_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

/** Fastify's `genReqId`: the client's `X-Request-Id` when it is acceptable, else a new UUID. */
export function requestIdOf(request: IncomingMessage): string {
  const given = request.headers['x-request-id']
  return typeof given === 'string' && CLIENT_REQUEST_ID.test(given) ? given : randomUUID()
}

/** The operation a request reached: its operationId, or the route, or "unknown" for unmatched paths. */
export function operationOf(request: FastifyRequest): string {
  const schema = request.routeOptions.schema as { operationId?: string } | undefined
  return schema?.operationId ?? request.routeOptions.url ?? 'unknown'
}

/**
 * One log line per request, written when the response is done: request id, operation, status, duration
 * and the name of the API key (never the key). The request id is echoed in `X-Request-Id` so a client can
 * quote it.
 */
export function addRequestLogging(app: FastifyInstance): void {
  app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    reply.header('x-request-id', request.id)
  })
  app.addHook('onResponse', async (request: FastifyRequest, reply: FastifyReply) => {
    request.log.info(
      {
        method: request.method,
        url: maskApiKeys(request.url),
        operation: operationOf(request),
        status: reply.statusCode,
        durationMs: Math.round(reply.elapsedTime * 100) / 100,
        key: request.apiKey?.name,
      },
      'request',
    )
  })
}
