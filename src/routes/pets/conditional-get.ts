import type { FastifyReply, FastifyRequest } from 'fastify'
import { ifNoneMatchHits } from '../../http/entity-tags.ts'
import type { Representation } from '../../pets/representation.ts'

/**
 * Sends a GET's 200 with its ETag, or 304 with no body when the client already holds it
 * (`If-None-Match`). Clients may keep the answer but must revalidate it before each use.
 */
function sendRepresentation(request: FastifyRequest, reply: FastifyReply, representation: Representation) {
  reply
    .headers(representation.headers)
    .header('etag', representation.etag)
    .header('cache-control', 'private, no-cache')
  if (ifNoneMatchHits(request.headers['if-none-match'], representation.etag)) return reply.code(304).send()
  return reply.type('application/json; charset=utf-8').send(representation.body)
}

/**
 * A handler's answer from a representation at hand (a cache hit: sent at once, the handler returning no
 * promise) or still being read (sent when ready; the promise is the handler's, so a failure is the error
 * answer). An async handler costs more per cached read (docs/decisions.md, "Per-request cost").
 */
export function sendRepresentationOf(
  request: FastifyRequest,
  reply: FastifyReply,
  representation: Representation | Promise<Representation>,
): Promise<FastifyReply> | undefined {
  if (representation instanceof Promise) {
    return representation.then((ready) => sendRepresentation(request, reply, ready))
  }
  sendRepresentation(request, reply, representation)
  return undefined
}
