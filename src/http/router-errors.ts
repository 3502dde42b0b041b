import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import { handleError } from './error-handler.ts'
import { setCommonHeaders } from './request-lifecycle.ts'

type SetHeaders = (request: FastifyRequest, reply: FastifyReply) => void

/**
 * Fastify's `frameworkErrors`, raised by the router before any route or hook runs (a path it cannot decode):
 * the answer still carries the skipped hooks' headers (every answer's, CORS's, the operation's), and
 * `recordWhenAnswered` logs and counts it.
 */
export function routerErrorHandler(
  setOperationHeaders: SetHeaders,
  setCors: SetHeaders,
  recordWhenAnswered: SetHeaders,
) {
  return (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    setCommonHeaders(request, reply)
    setCors(request, reply)
    recordWhenAnswered(request, reply)
    setOperationHeaders(request, reply)
    handleError(error, request, reply)
  }
}
