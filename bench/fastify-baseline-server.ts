import { readFileSync } from 'node:fs'
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify'
import Type from 'typebox'
import { parseJsonBody } from '../src/http/json-body-parser.ts'
import { createValidatorCompiler } from '../src/http/validator-compiler.ts'
import { ErrorSchema } from '../src/schemas/error.ts'
import {
  LIST_LIMIT,
  ListPetsQuerySchema,
  type NewPet,
  type Pet,
  PetIdParamsSchema,
  petSchemas,
} from '../src/schemas/pet.ts'
import { bearerCheck, KEPT_CREATES } from './baseline-common.ts'
import type { BaselineFixture, RecordedResponse } from './baseline-fixture.ts'

/**
 * The second baseline: the framework's own ceiling. A minimal Fastify app with the service's TypeBox
 * schemas, its validator and JSON body parser, serializing pets from memory with the response schemas on
 * every request — no store, read cache, rate limit, metrics or request log. The service's req/s over this
 * one's is what everything the service adds to a bare Fastify app costs.
 *
 * Usage: node bench/fastify-baseline-server.ts <fixture.json>, key in BENCH_API_KEY; prints `listening <port>`.
 */

const fixture = JSON.parse(readFileSync(process.argv[2] ?? '', 'utf8')) as BaselineFixture
const carriesKey = bearerCheck(process.env.BENCH_API_KEY ?? '')
const unauthorized = fixture.unauthorized
const unauthorizedBody = Buffer.from(unauthorized.bodyBase64, 'base64')

const decode = (recorded: RecordedResponse) => Buffer.from(recorded.bodyBase64, 'base64').toString()
const asPet = (raw: { id: number; name: string; categoryId: number; status?: Pet['status'] }): Pet => ({
  ...raw,
  id: BigInt(raw.id),
  categoryId: BigInt(raw.categoryId),
})

// Every pet the recorded reads show, in id order: the first pages and the pets the get scenario reads.
const byId = new Map<bigint, Pet>()
for (const recorded of Object.values(fixture.responses)) {
  const parsed = JSON.parse(decode(recorded))
  for (const raw of Array.isArray(parsed) ? parsed : [parsed]) byId.set(BigInt(raw.id), asPet(raw))
}
const pets = [...byId.values()].sort((a, b) => (a.id < b.id ? -1 : 1))
// The headers a read answers with besides the body (Link, ETag, RateLimit…), as the service sent them.
const headersByUrl = new Map(
  Object.entries(fixture.responses).map(([url, recorded]) => {
    const { 'content-type': _type, ...headers } = recorded.headers
    return [url, headers]
  }),
)
// A create's headers as the service sends them, but for Location (its own) and the content type (Fastify's).
const { location: _location, 'content-type': _createdType, ...createdHeaders } = fixture.created.headers
const created: Pet[] = new Array(KEPT_CREATES)
let nextId = BigInt(fixture.nextId)

// The service's own server option (app.ts): a baseline without it would count it as the service's gain.
const app = Fastify({ logger: false, http: { optimizeEmptyRequests: true } })
const shared = [...petSchemas, ErrorSchema]
for (const schema of shared) app.addSchema(schema)
app.setValidatorCompiler(createValidatorCompiler(shared))
app.removeAllContentTypeParsers()
app.addContentTypeParser('application/json', { parseAs: 'buffer' }, parseJsonBody)

app.addHook('onRequest', (request: FastifyRequest, reply: FastifyReply, done) => {
  if (carriesKey(request.headers.authorization)) return done()
  reply.code(unauthorized.status).headers(unauthorized.headers).send(unauthorizedBody)
})

function withRecordedHeaders(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const headers = headersByUrl.get(request.url)
  return headers === undefined ? reply : reply.headers(headers)
}

app.get<{ Querystring: { limit?: number; status?: Pet['status'] } }>(
  '/v1/pets',
  { schema: { querystring: ListPetsQuerySchema, response: { 200: Type.Ref('Pets') } } },
  (request, reply) => {
    const { limit = LIST_LIMIT.default, status } = request.query
    const page: Pet[] = []
    for (const pet of pets) {
      if (page.length === limit) break
      if (status === undefined || pet.status === status) page.push(pet)
    }
    return withRecordedHeaders(request, reply).send(page)
  },
)

app.get<{ Params: { petId: bigint } }>(
  '/v1/pets/:petId',
  { schema: { params: PetIdParamsSchema, response: { 200: Type.Ref('Pet') } } },
  (request, reply) => {
    const pet = byId.get(request.params.petId)
    if (pet === undefined)
      return reply.code(404).send({ code: 'pet_not_found', message: 'no pet', status: 404 })
    return withRecordedHeaders(request, reply).send(pet)
  },
)

app.post<{ Body: NewPet }>(
  '/v1/pets',
  { schema: { body: Type.Ref('NewPet'), response: { 201: Type.Ref('Pet') } } },
  (request, reply) => {
    const id = nextId++
    const pet: Pet = { id, ...request.body }
    created[Number(id % BigInt(KEPT_CREATES))] = pet
    return reply.code(201).headers(createdHeaders).header('location', `/v1/pets/${id}`).send(pet)
  },
)

let port = 0
await app.listen({ port: 0, host: '127.0.0.1' })
const address = app.server.address()
port = typeof address === 'object' && address ? address.port : 0
process.stdout.write(`listening ${port}\n`)
process.once('SIGTERM', () => {
  app.server.closeAllConnections()
  app.close().then(() => process.exit(0))
})
