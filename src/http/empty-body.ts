import type { IncomingMessage } from 'node:http'

/**
 * A request with neither `Content-Length` nor `Transfer-Encoding` has no body (RFC 9112 §6.3), and Node
 * makes it already ended (`optimizeEmptyRequests`, app.ts), so it never emits the `end` Fastify's body
 * reader waits for when a `Content-Type` says a body is there: that Content-Type, describing nothing, is
 * dropped, and no body is read (createPet then answers that its body must be a JSON object).
 */
export function dropContentTypeWithoutBody(request: IncomingMessage): void {
  if (request.readableEnded && request.headers['content-type'] !== undefined) {
    delete request.headers['content-type']
  }
}
