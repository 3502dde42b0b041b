import assert from 'node:assert/strict'
import { channel } from 'node:diagnostics_channel'
import type { FastifyInstance, RouteOptions } from 'fastify'
import { sendChecked } from './abuse-cases.ts'
import type { TestServer } from './test-server.ts'

export interface RegisteredRoute {
  method: string
  url: string
}

/**
 * Every route an app registers, as Fastify itself reports them: Fastify publishes each new instance on the
 * `fastify.initialization` diagnostics channel before any plugin runs, and an `onRoute` hook added there sees
 * every route that is ever added (HEAD routes Fastify adds for GET included), whatever plugin adds it.
 * Call `start()` before building the app and `stop()` once it is built.
 */
export function recordRoutes() {
  const routes: RegisteredRoute[] = []
  const initialization = channel('fastify.initialization')
  const onInstance = (message: unknown) => {
    const { fastify } = message as { fastify: FastifyInstance }
    fastify.addHook('onRoute', (route: RouteOptions) => {
      for (const method of [route.method].flat()) routes.push({ method: String(method), url: route.url })
    })
  }
  return {
    routes,
    start: () => initialization.subscribe(onInstance),
    stop: () => initialization.unsubscribe(onInstance),
  }
}

const NON_API_ROUTES = ['/healthz', '/readyz', '/v1/openapi.json']

/** The docs page (DOCS=on) is whatever is mounted under /docs: its assets are its own business. */
export const isDocsRoute = (url: string) => url === '/docs' || url.startsWith('/docs/')

/**
 * What the app may serve according to the OpenAPI document: each operation (with HEAD for a GET, as RFC 9110
 * asks) and GET/HEAD on the documented non-API routes, as `METHOD url` in Fastify's path syntax.
 */
export function documentedRoutes(document: { paths: Record<string, Record<string, unknown>> }): Set<string> {
  const served = new Set<string>()
  for (const [path, methods] of Object.entries(document.paths)) {
    const url = `/v1${path.replace(/\{(\w+)\}/g, ':$1')}`
    for (const method of Object.keys(methods)) {
      served.add(`${method.toUpperCase()} ${url}`)
      if (method === 'get') served.add(`HEAD ${url}`)
    }
  }
  for (const url of NON_API_ROUTES) for (const method of ['GET', 'HEAD']) served.add(`${method} ${url}`)
  return served
}

/**
 * Asserts that `routes` (all an app registered) are the document's: every documented route is there, a URL
 * outside the document only answers 404, the docs page only if `docs`, and every other method registered on
 * a documented URL only refuses, with 405 and the URL's documented methods in `Allow`.
 */
export async function assertRoutesAreDocumented(
  server: TestServer,
  routes: RegisteredRoute[],
  docs: boolean,
) {
  const document = await (await fetch(`${server.origin}/v1/openapi.json`)).json()
  const documented = documentedRoutes(document as Parameters<typeof documentedRoutes>[0])
  if (!docs)
    assert.deepEqual(
      routes.filter(({ url }) => isDocsRoute(url)),
      [],
      'no docs page',
    )
  const urlOf = (route: string) => route.split(' ')[1]
  const documentedUrls = new Set([...documented].map(urlOf))
  // A URL outside the document (`/v1/pets/`) may only say, for every method, that no operation is there.
  for (const { method, url } of routes.filter(({ url }) => !isDocsRoute(url) && !documentedUrls.has(url))) {
    const reply = await sendChecked(server, { method, target: url })
    assert.equal(reply.status, 404, `${method} ${url} is registered outside the document: it may only be 404`)
    if (method !== 'HEAD') assert.equal(JSON.parse(reply.text).code, 'route_not_found', `${method} ${url}`)
  }
  const registered = routes.filter(({ url }) => !isDocsRoute(url) && documentedUrls.has(url))
  const keys = new Set(registered.map(({ method, url }) => `${method} ${url}`))
  for (const route of documented) assert.ok(keys.has(route), `${route} is documented but not served`)
  assert.deepEqual(
    [...new Set(registered.map(({ url }) => url))].sort(),
    [...documentedUrls].sort(),
    'a documented URL not served',
  )
  for (const { method, url } of registered) {
    if (documented.has(`${method} ${url}`)) continue
    const allow = [...documented].filter((route) => urlOf(route) === url).map((route) => route.split(' ')[0])
    const reply = await sendChecked(server, { method, target: url.replace(':petId', '1') })
    assert.equal(reply.status, 405, `${method} ${url} is registered but not documented: it may only refuse`)
    assert.deepEqual(reply.headers.get('allow')?.split(', ').sort(), allow.sort(), `${method} ${url}: Allow`)
  }
}
