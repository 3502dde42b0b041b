import { METHODS } from 'node:http'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { answerPreflight } from './cors.ts'
import { handleError, handleRouteNotFound, methodNotAllowed } from './error-handler.ts'

/**
 * Makes every method Node's parser takes known to the router (Fastify knows nine), so that `guardMethods`
 * answers PROPFIND or LOCK on a path of this API with 405 as it does PUT, not 404. None has a body to read
 * here: each is refused before one would be. CONNECT never reaches the router (handleConnect, allowedAt).
 */
export function knowEveryMethod(app: FastifyInstance): void {
  for (const method of METHODS) {
    if (method !== 'CONNECT' && !app.supportedMethods.includes(method)) app.addHttpMethod(method)
  }
}

// Per server (an app's encapsulated parts share it): each guarded path, as a pattern, and its Allow value.
const guardedPaths = new WeakMap<object, Array<{ path: RegExp; allow: string }>>()

/** A route's URL (`/v1/pets/:petId`, `/docs/static/*`) as a pattern of the paths it serves. */
function pathPattern(url: string): RegExp {
  const segments = url.split('/').map((segment) => {
    if (segment.startsWith(':')) return '[^/]+'
    if (segment === '*') return '.*'
    return segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
  })
  return new RegExp(`^${segments.join('/')}$`)
}

/**
 * The methods a path of `server`'s app serves, as its 405 answers' `Allow` says, or undefined where no
 * operation is: for CONNECT, which never reaches the router (handleConnect).
 */
export function allowedAt(server: object, path: string): string | undefined {
  return guardedPaths.get(server)?.find((guarded) => guarded.path.test(path))?.allow
}

/**
 * Answers every method `url` does not serve with 405 and `Allow`, a CORS preflight with 204, in onRequest
 * so no other error masks it (docs/decisions.md, "HEAD and 405"). Its routes stay out of the OpenAPI
 * document, which lists only real operations.
 */
export function guardMethods(app: FastifyInstance, url: string, allowed: readonly string[]): void {
  const allow = allowed.join(', ')
  const guarded = guardedPaths.get(app.server) ?? []
  guardedPaths.set(app.server, guarded)
  guarded.push({ path: pathPattern(app.prefix + url), allow })
  const reject = (request: FastifyRequest, reply: FastifyReply) => {
    if (request.method === 'OPTIONS' && answerPreflight(app, request, reply, allow)) return
    handleError(methodNotAllowed(request.method, allow), request, reply)
  }
  app.route({
    method: app.supportedMethods.filter((method) => !allowed.includes(method)),
    url,
    schema: { hide: true },
    onRequest: reject,
    handler: reject,
  })
}

/**
 * Answers `url` with 404 for every method: a path ending in a slash that the router would otherwise
 * give to a parametric route with an empty parameter (`/pets/` to `/pets/:petId`).
 */
export function noOperationAt(app: FastifyInstance, url: string): void {
  app.route({
    method: app.supportedMethods,
    url,
    schema: { hide: true },
    onRequest: handleRouteNotFound,
    handler: handleRouteNotFound,
  })
}
