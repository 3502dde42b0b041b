import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import { handleError } from './error-handler.ts'
import { setCommonHeaders } from './request-lifecycle.ts'

type SetHeaders = (request: FastifyRequest, reply: FastifyReply) => void

/**
 * Fastify's `frameworkErrors`: errors the router raises before any route (or its hooks) runs, a path it
 * cannot decode. The answer carries what the skipped hooks would have given it: the headers of every
 * answer, CORS's (`setCors`) and those of the operation called (`setOperationHeaders`: a badly encoded
 * petId is still a getPet call); `recordWhenAnswered` writes its access line and counts it.
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
