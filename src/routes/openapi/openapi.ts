import swagger from '@fastify/swagger'
import type { FastifyInstance, FastifySchema } from 'fastify'
import fp from 'fastify-plugin'
import { guardMethods } from '../../http/method-guard.ts'
import { CLIENT_REQUEST_ID } from '../../http/request-id.ts'
import { ERROR_EXAMPLES } from './error-responses.ts'
import { boundInt64Schemas } from './openapi-exact-integers.ts'
import { markRequiredHeaders } from './response-headers.ts'

// Short, so the reference opens on its operations: the table of error codes is in the Error schema.
const DESCRIPTION = `A catalogue of animals held by a store: list them, add one, get one by id.
Every operation needs an API key as \`Authorization: Bearer <key>\`; every error has the body
\`{code, message, status}\` (the codes: schema **Error**). Integers marked int64 are exact over the whole
signed 64-bit range: parse them with a JSON library that keeps big integers.`

/**
 * The API's version (`info.version`), not the service's (package.json): the interface specification's, whose
 * major is the `/v1` of the paths; it changes only with the specification (docs/versioning.md).
 */
export const API_VERSION = '1.0.0'

// The service's code is not licensed to anyone (package.json: UNLICENSED).
const LICENSE = { name: 'Proprietary: all rights reserved', identifier: 'LicenseRef-Proprietary' }
const CONTACT = { name: 'Pet Store API team' }

/**
 * The deployments the document lists: this one first (`PUBLIC_BASE_URL`, relative by default), then
 * production and staging when configured (never a placeholder a client could mistake for a real host).
 */
export interface BaseUrls {
  publicBaseUrl: string
  productionBaseUrl: string | undefined
  stagingBaseUrl: string | undefined
}

type RouteResponses = Record<string, Record<string | symbol, unknown>>

/**
 * An error response's examples (one per code, see error-responses.ts) become its media type's examples:
 * written beside the `$ref` to Error, @fastify/swagger would drop them.
 */
function withErrorExamples(schema: FastifySchema): FastifySchema {
  const responses = schema?.response as RouteResponses | undefined
  if (responses === undefined) return schema
  const documented = Object.entries(responses).map(([status, entry]) => {
    const examples = entry[ERROR_EXAMPLES]
    if (examples === undefined) return [status, entry]
    const { $ref, description, headers } = entry
    const content = { 'application/json': { schema: { $ref }, examples } }
    return [status, { description, ...(headers ? { headers } : {}), content }]
  })
  return { ...schema, response: Object.fromEntries(documented) }
}

interface Parameter {
  name?: string
  in?: string
  required?: boolean
  description?: string
  schema?: { $ref?: string; type?: string; maxLength?: number; pattern?: string }
}

interface Document {
  paths: Record<string, Record<string, { parameters?: Parameter[]; responses?: Record<string, unknown> }>>
  components: { schemas: Record<string, { description?: string }> }
}

/**
 * A parameter typed by a named schema (listPets' `status`: PetStatus) is described by that schema:
 * @fastify/swagger drops a description written beside a `$ref`.
 */
function describeReferencedParameters(document: Document): void {
  for (const operations of Object.values(document.paths)) {
    for (const parameter of Object.values(operations).flatMap((operation) => operation.parameters ?? [])) {
      const name = parameter.schema?.$ref?.replace('#/components/schemas/', '')
      const description = name === undefined ? undefined : document.components.schemas[name]?.description
      if (parameter.description === undefined && description !== undefined)
        parameter.description = description
    }
  }
}

// Request headers every operation reads but none validates (a route's header schema would cost every
// request its check): declared here, so that a generated client can send them.
const REQUEST_ID_PARAMETER: Parameter = {
  name: 'x-request-id',
  in: 'header',
  required: false,
  description:
    "The caller's own id for this request, echoed in the response's X-Request-Id and written in the service's log; one that is not 1 to 128 letters, digits or `._:-` (or holds a key) is replaced.",
  schema: { type: 'string', maxLength: 128, pattern: CLIENT_REQUEST_ID.source },
}
const IF_NONE_MATCH_PARAMETER: Parameter = {
  name: 'if-none-match',
  in: 'header',
  required: false,
  description: 'An ETag this response had: 304 Not Modified, with no body, while it still holds.',
  schema: { type: 'string', maxLength: 4096 },
}

function declareRequestHeaders(document: Document): void {
  for (const operations of Object.values(document.paths)) {
    for (const operation of Object.values(operations)) {
      const headers = [
        REQUEST_ID_PARAMETER,
        ...(operation.responses?.['304'] ? [IF_NONE_MATCH_PARAMETER] : []),
      ]
      operation.parameters = [...(operation.parameters ?? []), ...headers.map((header) => ({ ...header }))]
    }
  }
}

/** The OpenAPI 3.1 document, generated from the route schemas; served at `/v1/openapi.json` without auth. */
export const openApi = fp(async function openApi(app: FastifyInstance, { baseUrls }: { baseUrls: BaseUrls }) {
  // Every server is public (`x-internal: false`) and says which environment it is.
  const servers = [
    {
      url: baseUrls.publicBaseUrl,
      description: 'This deployment, the one serving this document (local, staging or production)',
    },
    { url: baseUrls.productionBaseUrl, description: 'Production' },
    { url: baseUrls.stagingBaseUrl, description: 'Staging' },
  ]
    .filter((server): server is { url: string; description: string } => server.url !== undefined)
    .filter((server, index, all) => all.findIndex((other) => other.url === server.url) === index)
    .map((server) => ({ ...server, 'x-internal': false }))

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Pet Store',
        version: API_VERSION,
        description: DESCRIPTION,
        license: LICENSE,
        contact: CONTACT,
      },
      servers,
      tags: [{ name: 'pets', description: 'Animals of the catalogue' }],
      components: {
        securitySchemes: {
          bearerAuth: {
            type: 'http',
            scheme: 'bearer',
            description: 'An API key (psk_…) as a bearer token.',
          },
        },
      },
    },
    // Routes are mounted under /v1 and the servers already end in /v1, so paths are given relative to it.
    transform: ({ schema, url }) => ({ schema: withErrorExamples(schema), url: url.replace(/^\/v1/, '') }),
    transformObject: (documentObject) => {
      const document =
        'openapiObject' in documentObject ? documentObject.openapiObject : documentObject.swaggerObject
      markRequiredHeaders(document as Parameters<typeof markRequiredHeaders>[0])
      describeReferencedParameters(document as unknown as Document)
      declareRequestHeaders(document as unknown as Document)
      boundInt64Schemas(document)
      return document
    },
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? `def-${i}`) },
  })

  guardMethods(app, '/v1/openapi.json', ['GET', 'HEAD'])
  let document: string | undefined
  app.get('/v1/openapi.json', { schema: { hide: true } }, async (_request, reply) => {
    document ??= JSON.stringify(app.swagger())
    return reply.type('application/json; charset=utf-8').send(document)
  })
})
