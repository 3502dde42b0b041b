import { readFileSync } from 'node:fs'
import { STATUS_CODES } from 'node:http'
import swaggerUi from '@fastify/swagger-ui'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { ApiError } from '../../errors.ts'
import { handleError, handleRouteNotFound, isFrameworkError } from '../../http/error-handler.ts'
import { guardMethods } from '../../http/method-guard.ts'
import { packageFilesFromMemory } from './docs-package-files.ts'
import { exactJsonBodies } from './docs-page-plugin.ts'
import type { BaseUrls } from './openapi.ts'

// Outside /v1: reading the reference needs no key.
const DOCS_PREFIX = '/docs'

// Files of the @fastify/swagger-ui package, served as they are, from memory (docs-package-files.ts).
const STATIC_FILES = `${DOCS_PREFIX}/static/*`
// Built by the plugin from our options (not a package file), so it is not cached like one.
const INITIALIZER = `${DOCS_PREFIX}/static/swagger-initializer.js`
// The package's own index.html, served for the folder: it would load the document from the wrong place.
const STATIC_FOLDER = `${DOCS_PREFIX}/static/`
// Every path the plugin serves (the page, the document as JSON and YAML, the files): GET and HEAD only.
const DOCS_PATHS = [
  DOCS_PREFIX,
  `${DOCS_PREFIX}/`,
  `${DOCS_PREFIX}/json`,
  `${DOCS_PREFIX}/yaml`,
  STATIC_FILES,
]

// Served by the plugin under /docs/static/theme/ (style-src 'self').
const STYLESHEET = {
  filename: 'docs-page.css',
  content: readFileSync(new URL('docs-page.css', import.meta.url), 'utf8'),
}

/**
 * Where the page may connect: itself, and the deployments its OpenAPI `servers` offer in "Try it out"
 * (a relative base URL is this origin). Nothing else: the page must work, and leak keys, nowhere else.
 */
function connectSources({ publicBaseUrl, productionBaseUrl, stagingBaseUrl }: BaseUrls): string {
  const origins = [publicBaseUrl, productionBaseUrl, stagingBaseUrl]
    .filter((url): url is string => url !== undefined && /^https?:\/\//.test(url))
    .map((url) => new URL(url).origin)
  return ["'self'", ...new Set(origins)].join(' ')
}

/**
 * Every asset is the service's own ('self'); Swagger UI needs no inline script or style (React sets styles
 * through the DOM, which CSP allows), only `data:` images its stylesheet embeds. No framing: the page takes
 * API keys, so it must not be overlaid by another site (clickjacking).
 */
function contentSecurityPolicy(baseUrls: BaseUrls): string {
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    `connect-src ${connectSources(baseUrls)}`,
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ')
}

/**
 * The package's files hold no per-key data, so they are not `no-store`; their URLs carry no version, so a
 * browser must revalidate each (`no-cache`) and never runs an old bundle after an upgrade
 * (docs/decisions.md, "The page's files from memory"). The page, initializer and document stay `no-store`.
 */
function cacheStaticFiles(request: FastifyRequest, reply: FastifyReply, _payload: unknown, done: () => void) {
  const served = reply.statusCode < 300 || reply.statusCode === 304
  if (served && request.routeOptions.url === STATIC_FILES && request.url.split('?')[0] !== INITIALIZER) {
    reply.header('cache-control', 'no-cache')
  }
  done()
}

/** The folder of the package's files leads to the page, as the plugin does for its old index.html. */
function redirectStaticFolder(request: FastifyRequest, reply: FastifyReply, done: () => void) {
  if (request.url.split('?')[0] === STATIC_FOLDER) return void reply.redirect(`${DOCS_PREFIX}/`)
  done()
}

/**
 * A path climbing out of the package's folder (`..`) is refused by the file server with 403, which has no
 * code of ours: it is answered as the unknown path it is.
 */
function handleDocsError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const status = error.statusCode ?? 500
  if (status === 403) handleRouteNotFound(request, reply)
  // The file server's refusals (a path no file can have, a range that cannot be served, a failed
  // precondition) are the client's; its 400 is only ever for the first.
  else if (status >= 400 && status < 500 && !isFrameworkError(error)) {
    const message =
      status === 400
        ? 'the path cannot name a file: it holds a NUL byte (%00) or an escape that does not decode'
        : STATUS_CODES[status]
    handleError(new ApiError('bad_request', message ?? 'bad request'), request, reply)
  } else handleError(error, request, reply)
}

/**
 * The interactive API reference (Swagger UI) at /docs, rendering the OpenAPI document the service serves
 * (`app.swagger()`, as at /v1/openapi.json) with every asset from the @fastify/swagger-ui package: it works
 * with no internet access. Registered only when `DOCS=on`; its routes are hidden from the document.
 */
export async function docsPage(app: FastifyInstance, { baseUrls }: { baseUrls: BaseUrls }): Promise<void> {
  app.addHook('onRequest', redirectStaticFolder)
  app.addHook('onRequest', packageFilesFromMemory(STATIC_FILES))
  app.addHook('onSend', cacheStaticFiles)
  app.setErrorHandler(handleDocsError)

  for (const url of DOCS_PATHS) guardMethods(app, url, ['GET', 'HEAD'])

  await app.register(swaggerUi, {
    routePrefix: DOCS_PREFIX,
    staticCSP: contentSecurityPolicy(baseUrls),
    // Null in the page: no request to validator.swagger.io, and no validity badge from it.
    validatorUrl: false,
    theme: { title: 'Pet Store API reference', css: [STYLESHEET] },
    uiConfig: {
      // No top bar: it only holds a box to load other documents and the Swagger logo. The page loads the
      // plugin's ./json, which serves app.swagger(): the very document of /v1/openapi.json.
      layout: 'BaseLayout',
      // A pasted key lives in the page's memory only, never in localStorage for other scripts to read.
      persistAuthorization: false,
      // Each operation gets a shareable #/pets/<operationId> link.
      deepLinking: true,
      // Operations listed, collapsed: the three fit on one screen and each opens on a click.
      docExpansion: 'list',
      // The operationIds name the operations in the client and the README.
      displayOperationId: true,
      displayRequestDuration: true,
      // The reference is read first; "Try it out" makes the fields editable when asked.
      tryItOutEnabled: false,
      // Response bodies as received (int64 values exact); Swagger UI's own presets and plugins stay.
      plugins: [exactJsonBodies],
    },
  })
}
