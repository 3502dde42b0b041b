import type { FastifyRequest } from 'fastify'

/** The operation a request reached: its operationId, or the route, or "unknown" for unmatched paths. */
export function operationOf(request: FastifyRequest): string {
  // Read once: Fastify builds a new routeOptions object on every read.
  const { schema, url } = request.routeOptions
  return (schema as { operationId?: string } | undefined)?.operationId ?? url ?? 'unknown'
}
