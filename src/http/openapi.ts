import swagger from '@fastify/swagger'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { Config } from '../config.ts'
import { ERROR_CODES } from '../errors.ts'
import { guardMethods } from './method-guard.ts'
import { markRequiredHeaders } from './response-headers.ts'

const errorCodeTable = Object.entries(ERROR_CODES)
  .map(([code, { status, summary }]) => `| ${status} | \`${code}\` | ${summary} |`)
  .join('\n')

const DESCRIPTION = `A catalogue of animals held by a store: list them, add one, get one by id.

Every operation needs an API key sent as \`Authorization: Bearer <key>\`. Every error has the body
\`{code, message, status}\`; \`code\` is one of:

| Status | Code | Meaning |
| --- | --- | --- |
${errorCodeTable}

Integers marked int64 are exact over the whole signed 64-bit range: parse them with a JSON library that
keeps big integers if your language's numbers are doubles.`

/** The OpenAPI 3.1 document, generated from the route schemas; served at `/v1/openapi.json` without auth. */
export const openApi = fp(async function openApi(app: FastifyInstance, { config }: { config: Config }) {
  const servers = [
    { url: config.PUBLIC_BASE_URL, description: 'This deployment' },
    { url: config.PRODUCTION_BASE_URL, description: 'Production' },
    { url: config.STAGING_BASE_URL, description: 'Staging' },
  ].filter((server, index, all) => all.findIndex((other) => other.url === server.url) === index)

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'Pet Store', version: '1.0.0', description: DESCRIPTION },
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
    transform: ({ schema, url }) => ({ schema, url: url.replace(/^\/v1/, '') }),
    transformObject: (documentObject) => {
      const document =
        'openapiObject' in documentObject ? documentObject.openapiObject : documentObject.swaggerObject
      markRequiredHeaders(document as Parameters<typeof markRequiredHeaders>[0])
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
