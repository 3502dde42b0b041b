import type { IncomingMessage } from 'node:http'
import type { Readable } from 'node:stream'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { awaitsInvitation } from './request-head.ts'

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

/**
 * A body framed (chunked, `Content-Length: 00`) without a Content-Type is refused 415 by Fastify before
 * it is read; an empty one is no body, answered as one without framing is (docs/decisions.md, "An empty
 * body is no body"). Its first bytes are awaited: none, and the framing is dropped; some are put back.
 */
export function dropFramingOfEmptyBody(
  request: FastifyRequest,
  _reply: FastifyReply,
  payload: Readable,
  done: (error: null, payload: Readable) => void,
): void {
  const { headers } = request.raw
  if (!framedWithoutType(request.raw)) {
    done(null, payload)
    return
  }
  const settle = (empty: boolean) => {
    payload.off('readable', onReadable).off('end', onEnd).off('close', onClose).off('error', onClose)
    if (empty) {
      delete headers['transfer-encoding']
      delete headers['content-length']
    }
    done(null, payload)
  }
  const onReadable = () => {
    const chunk = payload.read()
    // Null: nothing yet, or the end, which 'end' says next.
    if (chunk === null) return
    payload.unshift(chunk)
    settle(false)
  }
  const onEnd = () => settle(true)
  const onClose = () => settle(false)
  if (payload.readableEnded) settle(true)
  else payload.on('readable', onReadable).on('end', onEnd).on('close', onClose).on('error', onClose)
}

/**
 * Whether a request frames a body and names no type for it. Fastify reads a body of no framing, or of
 * `Content-Length: 0`, as none. One waiting for `100 Continue` is refused (415) before it sends its body.
 */
function framedWithoutType(request: IncomingMessage): boolean {
  const { headers } = request
  if (headers['content-type'] !== undefined || awaitsInvitation(request)) return false
  return headers['transfer-encoding'] !== undefined || (headers['content-length'] ?? '0') !== '0'
}
