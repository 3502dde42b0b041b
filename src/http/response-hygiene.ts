import cors from '@fastify/cors'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'

declare module 'fastify' {
  interface FastifyInstance {
    /** Set when CORS is on: OPTIONS then belongs to the preflight handler, not to the 405 guards. */
    corsEnabled: boolean
  }
}

/**
 * Headers every response gets: `X-Content-Type-Options: nosniff`, and `Cache-Control: no-store` unless
 * the route chose a caching policy (conditional GET does) — API answers hold per-key data that no shared
 * cache should keep. CORS is off unless origins are listed; then only those origins may call from a browser.
 */
export async function addResponseHygiene(app: FastifyInstance, { corsOrigins }: { corsOrigins: string[] }) {
  app.addHook('onSend', async (_request: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    reply.header('x-content-type-options', 'nosniff')
    if (!reply.hasHeader('cache-control')) reply.header('cache-control', 'no-store')
    return payload
  })
  app.decorate('corsEnabled', corsOrigins.length > 0)
  if (corsOrigins.length === 0) return
  await app.register(cors, {
    origin: corsOrigins,
    methods: ['GET', 'HEAD', 'POST'],
    allowedHeaders: ['authorization', 'content-type', 'idempotency-key', 'if-none-match', 'x-request-id'],
    exposedHeaders: [
      'location',
      'link',
      'etag',
      'deprecation',
      'sunset',
      'idempotent-replayed',
      'retry-after',
      'ratelimit-limit',
      'ratelimit-remaining',
      'ratelimit-reset',
      'x-request-id',
    ],
    maxAge: 600,
  })
}
