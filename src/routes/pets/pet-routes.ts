import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { admission } from '../../admission/admission.ts'
import { bearerAuth } from '../../admission/bearer-auth.ts'
import { deprecationHeaders } from '../../admission/deprecation-notice.ts'
import type { RateLimitHook } from '../../admission/rate-limit/rate-limit.ts'
import type { Authenticate } from '../../auth/authenticator.ts'
import { dropFramingOfEmptyBody } from '../../http/empty-body.ts'
import { guardMethods, noOperationAt } from '../../http/method-guard.ts'
import type { DeprecatedCallCounter } from '../../pets/deprecated-call-counter.ts'
import type { DeprecationPolicy } from '../../pets/get-pet-deprecation.ts'
import type { CreatePet } from '../../pets/pet-creator.ts'
import type { PetReader } from '../../pets/pet-reader.ts'
import type { ListPetsQuery, NewPet, PetIdParams } from '../../schemas/pet.ts'
import { sendRepresentationOf } from './conditional-get.ts'
import { idempotencyKeyOf } from './idempotency-key-header.ts'
import { createPetSchema, getPetSchema, listPetsSchema } from './pet-route-schemas.ts'

export interface PetRoutesOptions {
  authenticate: Authenticate
  /** Counts each authenticated request against its key's limit; none when rate limiting is off. */
  limitRate?: RateLimitHook
  createPet: CreatePet
  readPets: PetReader
  getPetDeprecation: DeprecationPolicy
  deprecatedCalls: DeprecatedCallCounter
  publicBaseUrl: string
  now: () => number
}

export async function petRoutes(app: FastifyInstance, options: PetRoutesOptions) {
  const { readPets, publicBaseUrl } = options
  const admitting = {
    checkBearer: bearerAuth(options.authenticate),
    ...(options.limitRate ? { limitRate: options.limitRate } : {}),
  }
  const admit = admission(admitting)
  const admitDeprecated = admission({
    ...admitting,
    deprecation: { policy: options.getPetDeprecation, now: options.now, calls: options.deprecatedCalls },
  })

  app.get<{ Querystring: ListPetsQuery }>(
    '/pets',
    { schema: listPetsSchema, onRequest: admit },
    (request, reply) => {
      const page = readPets.page(request.query, (pets) => reply.serialize(pets) as string)
      return sendRepresentationOf(request, reply, page)
    },
  )

  app.post<{ Body: NewPet }>(
    '/pets',
    { schema: createPetSchema, onRequest: admit, preParsing: dropFramingOfEmptyBody },
    async (request, reply) => {
      const apiKey = request.apiKey as NonNullable<typeof request.apiKey>
      const created = await options.createPet(request.body, apiKey.id, idempotencyKeyOf(request))
      if (created.replayed) reply.header('idempotent-replayed', 'true')
      return reply.code(201).header('location', `${publicBaseUrl}/pets/${created.pet.id}`).send(created.pet)
    },
  )

  app.get<{ Params: PetIdParams }>(
    '/pets/:petId',
    {
      schema: getPetSchema,
      onRequest: admitDeprecated,
    },
    (request, reply) => {
      const pet = readPets.pet(request.params.petId, (found) => reply.serialize(found) as string)
      return sendRepresentationOf(request, reply, pet)
    },
  )
}

/**
 * Every other method on these paths answers 405 with `Allow` (see `guardMethods`); the collection with a
 * trailing slash is no operation, as a pet's path with one is not.
 */
export async function petMethodGuards(app: FastifyInstance) {
  guardMethods(app, '/pets', ['GET', 'HEAD', 'POST'])
  guardMethods(app, '/pets/:petId', ['GET', 'HEAD'])
  noOperationAt(app, '/pets/')
}

/**
 * Sets getPet's deprecation headers on a getPet call answered before its own hooks run (its path or query
 * cannot be decoded): its answer carries them like every other. `prefix` is where the API is mounted
 * (`/v1`); a pet's path is recognised as far as a path the router could not parse can be.
 */
export function getPetEarlyHeaders(policy: DeprecationPolicy, prefix: string) {
  const getPetHeaders = deprecationHeaders(policy)
  const getPetPath = new RegExp(`^${prefix}/pets/[^/?]+(\\?|$)`)
  return (request: FastifyRequest, reply: FastifyReply): void => {
    if ((request.method === 'GET' || request.method === 'HEAD') && getPetPath.test(request.url)) {
      reply.headers(getPetHeaders)
    }
  }
}
