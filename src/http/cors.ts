import cors from '@fastify/cors'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'

declare module 'fastify' {
  interface FastifyInstance {
    /** Set when CORS is on: a preflight on a path of the API is then answered, not refused with 405. */
    corsEnabled: boolean
  }
}

const ALLOWED_HEADERS = ['authorization', 'content-type', 'idempotency-key', 'if-none-match', 'x-request-id']
const MAX_AGE_S = 600
// The headers a browser's script may read of an answer.
const EXPOSED_HEADERS = [
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
]

// What a preflight's answer says beside the origin (which the plugin sets on every answer) and the path's
// own methods. `Content-Length: 0` on a 204, which RFC 9110 §8.6 says not to send, as the plugin does:
// Safari otherwise waits for a body that never comes.
const PREFLIGHT_HEADERS = {
  'access-control-allow-headers': ALLOWED_HEADERS.join(', '),
  'access-control-max-age': String(MAX_AGE_S),
  'content-length': '0',
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
    exposedHeaders: EXPOSED_HEADERS,
    // The plugin would answer every OPTIONS, anywhere, as a preflight (or one without its headers with a
    // plain-text 400). It only sets the origin's headers; preflights are answered by each path's 405 guard
    // (`answerPreflight`), after the checks every request gets; any other OPTIONS is a 405 or 404.
    preflight: false,
  })
}

/**
 * Answers a CORS preflight (an OPTIONS with Origin and Access-Control-Request-Method) with 204 and the
 * path's methods (`allow`), when CORS is on; true if it did. The plugin has set the origin's headers, if
 * the origin is allowed.
 */
export function answerPreflight(
  app: FastifyInstance,
  request: FastifyRequest,
  reply: FastifyReply,
  allow: string,
): boolean {
  const { headers } = request
  if (!app.corsEnabled || headers.origin === undefined) return false
  if (headers['access-control-request-method'] === undefined) return false
  reply.code(204).header('access-control-allow-methods', allow).headers(PREFLIGHT_HEADERS).send()
  return true
}

/**
 * Sets the plugin's headers on an answer no hook runs for (the router's 400 for a path it cannot decode),
 * as the plugin sets them: `Vary` and the exposed headers always, the origin when it is allowed.
 */
export function corsOfRouterErrors(
  corsOrigins: readonly string[],
): (request: FastifyRequest, reply: FastifyReply) => void {
  if (corsOrigins.length === 0) return () => {}
  const allowed = new Set(corsOrigins)
  const exposed = EXPOSED_HEADERS.join(', ')
  return (request, reply) => {
    const { origin } = request.headers
    if (origin !== undefined && allowed.has(origin)) reply.header('access-control-allow-origin', origin)
    reply.header('access-control-expose-headers', exposed).header('vary', 'Origin')
  }
}
