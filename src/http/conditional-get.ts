import { createHash } from 'node:crypto'
import type { FastifyReply, FastifyRequest } from 'fastify'

/** A 200 representation, serialized once: its exact bytes, strong validator, and extra headers. */
export interface Representation {
  body: string
  etag: string
  headers: Readonly<Record<string, string>>
}

/** A strong ETag: a digest of the exact bytes sent. */
export function representationOf(body: string, headers: Record<string, string> = {}): Representation {
  return { body, etag: `"${createHash('sha1').update(body).digest('base64url')}"`, headers }
}

/** RFC 9110 §13.1.2: `*`, or a list of entity tags compared weakly (a `W/` prefix does not matter). */
function noneMatch(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false
  if (header.trim() === '*') return true
  return header.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag)
}

/**
 * Sends a GET's 200 with its ETag, or 304 with no body when the client already holds it
 * (`If-None-Match`). Clients may keep the answer but must revalidate it before each use.
 */
export function sendRepresentation(
  request: FastifyRequest,
  reply: FastifyReply,
  representation: Representation,
) {
  reply
    .headers(representation.headers)
    .header('etag', representation.etag)
    .header('cache-control', 'private, no-cache')
  if (noneMatch(request.headers['if-none-match'], representation.etag)) return reply.code(304).send()
  return reply.type('application/json; charset=utf-8').send(representation.body)
}
