import { randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import type { FastifyRequest } from 'fastify'
import { containsApiKey } from '../auth/api-key.ts'

// A client's own request id is kept if it is short and plain; anything else is replaced, never logged as is.
const CLIENT_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

/**
 * Fastify's `genReqId`: the client's `X-Request-Id` when it is acceptable, else a new UUID. A key is made
 * of the same characters, so an id holding one is replaced too (it would be echoed and logged).
 */
export function requestIdOf(request: IncomingMessage): string {
  const given = request.headers['x-request-id']
  return typeof given === 'string' && CLIENT_REQUEST_ID.test(given) && !containsApiKey(given)
    ? given
    : randomUUID()
}

/** The operation a request reached: its operationId, or the route, or "unknown" for unmatched paths. */
export function operationOf(request: FastifyRequest): string {
  // Read once: Fastify builds a new routeOptions object on every read.
  const { schema, url } = request.routeOptions
  return (schema as { operationId?: string } | undefined)?.operationId ?? url ?? 'unknown'
}
