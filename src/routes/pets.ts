import type { FastifyInstance } from 'fastify'
import type { Authenticate } from '../auth/authenticator.ts'
import { ApiError } from '../errors.ts'
import { bearerAuth } from '../http/bearer-auth.ts'
import { representationOf, sendRepresentation } from '../http/conditional-get.ts'
import { announceDeprecation, type DeprecationPolicy } from '../http/deprecation.ts'
import { idempotencyKeyOf } from '../http/idempotency-key.ts'
import { guardMethods } from '../http/method-guard.ts'
import type { PageCursors } from '../http/page-cursor.ts'
import type { DeprecatedCallTally } from '../pets/deprecated-call-tally.ts'
import type { CreatePet } from '../pets/pet-creator.ts'
import type { ReadCache } from '../pets/read-cache.ts'
import { LIST_LIMIT, type ListPetsQuery, type NewPet, type Pet, type PetIdParams } from '../schemas/pet.ts'
import type { Store } from '../store/store.ts'
import { createPetSchema, getPetSchema, listPetsSchema } from './pet-route-schemas.ts'

export interface PetRoutesOptions {
  store: Store
  authenticate: Authenticate
  createPet: CreatePet
  cursors: PageCursors
  getPetDeprecation: DeprecationPolicy
  deprecatedCalls: DeprecatedCallTally
  publicBaseUrl: string
  /** Serialized answers that never change (see ReadCache). */
  cache: ReadCache
  now: () => number
}

export async function petRoutes(app: FastifyInstance, options: PetRoutesOptions) {
  const { store, cursors, publicBaseUrl, cache } = options
  const requireApiKey = bearerAuth(options.authenticate)

  app.get<{ Querystring: ListPetsQuery }>(
    '/pets',
    { schema: listPetsSchema, onRequest: requireApiKey },
    async (request, reply) => {
      const { limit = LIST_LIMIT.default, status, cursor } = request.query
      const afterId = cursor === undefined ? undefined : cursors.decode(cursor, status)
      const key = `list:${status ?? ''}:${afterId ?? ''}:${limit}`
      let page = cache.get(key)
      if (page === undefined) {
        // One row more than asked says whether a next page exists, without counting anything.
        const pets = await store.listPets({ limit: limit + 1, status, afterId })
        const full = pets.length > limit
        if (full) pets.length = limit
        const next = new URLSearchParams({ limit: String(limit), ...(status ? { status } : {}) })
        if (full) next.set('cursor', cursors.encode({ afterId: (pets.at(-1) as Pet).id, status }))
        page = representationOf(
          reply.serialize(pets) as string,
          full ? { link: `<${publicBaseUrl}/pets?${next}>; rel="next"` } : {},
        )
        // A full page followed by more pets never changes; the last page does, as pets are added.
        if (full) cache.set(key, page)
      }
      return sendRepresentation(request, reply, page)
    },
  )

  app.post<{ Body: NewPet }>(
    '/pets',
    { schema: createPetSchema, onRequest: requireApiKey },
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
      onRequest: [announceDeprecation(options.getPetDeprecation, options.now), requireApiKey],
      onResponse: async (request) => {
        if (request.apiKey) options.deprecatedCalls.count(request.apiKey)
      },
    },
    async (request, reply) => {
      const key = `pet:${request.params.petId}`
      let representation = cache.get(key)
      if (representation === undefined) {
        const found = await store.getPet(request.params.petId)
        if (found === undefined) throw new ApiError('pet_not_found', `no pet has id ${request.params.petId}`)
        representation = representationOf(reply.serialize(found) as string)
        cache.set(key, representation)
      }
      return sendRepresentation(request, reply, representation)
    },
  )
}

/** Every other method on these paths answers 405 with `Allow` (see `guardMethods`). */
export async function petMethodGuards(app: FastifyInstance) {
  guardMethods(app, '/pets', ['GET', 'HEAD', 'POST'])
  guardMethods(app, '/pets/:petId', ['GET', 'HEAD'])
}
