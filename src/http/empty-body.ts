import { Readable } from 'node:stream'
import type { preParsingHookHandler } from 'fastify'

/**
 * The `preParsing` hook of an operation that reads a body. A request with neither `Content-Length` nor
 * `Transfer-Encoding` has none (RFC 9112 §6.3), and Node makes it already ended (`optimizeEmptyRequests`,
 * app.ts), so it never emits the `end` Fastify's body reader waits for: it is given an empty body instead.
 */
export const emptyBodyWhenEnded: preParsingHookHandler = (request, _reply, payload, done) => {
  done(null, request.raw.readableEnded ? Readable.from([]) : payload)
}
