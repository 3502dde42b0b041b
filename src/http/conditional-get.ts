import { createHash } from 'node:crypto'
import type { FastifyReply, FastifyRequest } from 'fastify'

/** RFC 9110 §13.1.2: `*`, or a list of entity tags compared weakly (a `W/` prefix does not matter). */
function noneMatch(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false
  if (header.trim() === '*') return true
  return header.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag)
}

/**
 * An onSend hook for GET operations: a strong ETag (a digest of the exact bytes sent) on every 200, and
 * 304 with no body when the client already holds them (`If-None-Match`). Responses may be stored by the
 * client only, and must be revalidated before each use.
 */
export async function conditionalGet(request: FastifyRequest, reply: FastifyReply, payload: unknown) {
  if (reply.statusCode !== 200 || typeof payload !== 'string') return payload
  const etag = `"${createHash('sha1').update(payload).digest('base64url')}"`
  reply.header('etag', etag).header('cache-control', 'private, no-cache')
  if (!noneMatch(request.headers['if-none-match'], etag)) return payload
  reply.code(304)
  return ''
}
