import type { IncomingMessage } from 'node:http'
import type { Readable } from 'node:stream'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { awaitsInvitation } from './request-head.ts'

/**
 * A request without `Content-Length` or `Transfer-Encoding` has no body and starts ended, so its Content-Type
 * is dropped and no body awaited (docs/decisions.md, "Requests without a body start ended").
 */
export function dropContentTypeWithoutBody(request: IncomingMessage): void {
  if (request.readableEnded && request.headers['content-type'] !== undefined) {
    delete request.headers['content-type']
  }
}

/**
 * A body framed without a Content-Type is refused 415 by Fastify before it is read; an empty one is no
 * body, answered as one without framing is (docs/decisions.md, "An empty body is no body"). A length of
 * zeros (`00`) says so at once; a chunked body's first bytes are awaited: none, and its framing is dropped.
 */
export function dropFramingOfEmptyBody(
  request: FastifyRequest,
  _reply: FastifyReply,
  payload: Readable,
  done: (error: null, payload: Readable) => void,
): void {
  const { headers } = request.raw
  const dropFraming = () => {
    delete headers['transfer-encoding']
    delete headers['content-length']
  }
  const framing = framingWithoutType(request.raw)
  if (framing === 'none' || payload.destroyed) {
    done(null, payload)
    return
  }
  if (framing === 'zero-length' || payload.readableEnded) {
    dropFraming()
    done(null, payload)
    return
  }
  const settle = (empty: boolean) => {
    payload.off('readable', onReadable).off('end', onEnd).off('close', onClose).off('error', onClose)
    if (empty) dropFraming()
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
  payload.on('readable', onReadable).on('end', onEnd).on('close', onClose).on('error', onClose)
}

/**
 * How a request without a Content-Type frames a body Fastify would refuse unread: 'none' where it reads
 * none (no framing, `Content-Length: 0`), has a type to parse, has a length, or waits for `100 Continue`
 * before it sends its chunks (refused, 415, before they are sent); a length of zeros; or chunks, looked at.
 */
function framingWithoutType(request: IncomingMessage): 'none' | 'zero-length' | 'chunked' {
  const { headers } = request
  if (headers['content-type'] !== undefined) return 'none'
  if (headers['transfer-encoding'] !== undefined) return awaitsInvitation(request) ? 'none' : 'chunked'
  const length = headers['content-length']
  return length !== undefined && length !== '0' && /^0+$/.test(length) ? 'zero-length' : 'none'
}
