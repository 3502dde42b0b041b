import type { FastifyInstance, FastifyRequest } from 'fastify'
import { ApiError } from '../errors.ts'
import { handleConnect, handleUnmetExpectation } from './error-handler.ts'

/**
 * Checks every request must pass before routing matters: the service is not shutting down, and an
 * HTTP/1.1 request names its Host (RFC 9112 §3.2; Node's own check would answer without our Error body).
 * Also gives the raw server our answers for `Expect` and CONNECT.
 */
export function addRequestGuards(app: FastifyInstance): void {
  let closing = false
  app.addHook('preClose', async () => {
    closing = true
  })
  app.addHook('onRequest', async (request: FastifyRequest) => {
    if (closing) {
      throw new ApiError('service_unavailable', 'the service is shutting down; retry on another instance', {
        connection: 'close',
        'retry-after': '1',
      })
    }
    if (request.headers.host === undefined && request.raw.httpVersion === '1.1') {
      throw new ApiError('bad_request', 'the Host header is required')
    }
  })
  app.server.on('checkExpectation', handleUnmetExpectation)
  app.server.on('connect', handleConnect)
}
