import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { ApiError } from '../errors.ts'
import { handleError } from './error-handler.ts'

/**
 * Answers every method `url` does not serve with 405 and `Allow` (RFC 9110 §15.5.6), instead of the 404
 * a router gives. It answers in onRequest, before authentication or any body is read, so no other error
 * can mask it; the routes are hidden from the OpenAPI document, which lists only real operations.
 */
export function guardMethods(app: FastifyInstance, url: string, allowed: readonly string[]): void {
  const allow = allowed.join(', ')
  const reject = (request: FastifyRequest, reply: FastifyReply) =>
    handleError(
      new ApiError('method_not_allowed', `${request.method} is not allowed here; allowed: ${allow}`, {
        allow,
      }),
      request,
      reply,
    )
  app.route({
    // With CORS on, OPTIONS is the preflight's (answered by the CORS handler), so it is not guarded.
    method: app.supportedMethods.filter(
      (method) => !allowed.includes(method) && !(method === 'OPTIONS' && app.corsEnabled),
    ),
    url,
    schema: { hide: true },
    onRequest: reject,
    handler: reject,
  })
}
