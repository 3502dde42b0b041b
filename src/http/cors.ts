import cors from '@fastify/cors'
import type { FastifyInstance } from 'fastify'

declare module 'fastify' {
  interface FastifyInstance {
    /** Set when CORS is on: OPTIONS then belongs to the preflight handler, not to the 405 guards. */
    corsEnabled: boolean
  }
}

/** CORS is off unless origins are listed; then only those origins may call from a browser. */
export async function registerCors(
  app: FastifyInstance,
  { corsOrigins }: { corsOrigins: readonly string[] },
) {
  app.decorate('corsEnabled', corsOrigins.length > 0)
  if (corsOrigins.length === 0) return
  await app.register(cors, {
    origin: [...corsOrigins],
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
    // An OPTIONS without the preflight headers is answered like a preflight rather than with the
    // plugin's plain-text 400, which would break the promise that every error is our JSON body.
    strictPreflight: false,
    // A preflight goes on through the checks every request gets (the drain, one Host) before the
    // plugin's OPTIONS route answers it.
    preflightContinue: true,
  })
}
