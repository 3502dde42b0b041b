import type { FastifyInstance } from 'fastify'
import Type from 'typebox'
import type { Authenticate } from '../auth/authenticator.ts'
import { ApiError } from '../errors.ts'
import { bearerAuth } from '../http/bearer-auth.ts'
import { COMMON_ERRORS, errorResponses } from '../http/error-responses.ts'
import { guardMethods } from '../http/method-guard.ts'
import {
  LIST_LIMIT,
  type ListPetsQuery,
  ListPetsQuerySchema,
  type NewPet,
  type Pet,
  type PetIdParams,
  PetIdParamsSchema,
} from '../schemas/pet.ts'
import type { Store } from '../store/store.ts'

export interface PetRoutesOptions {
  store: Store
  authenticate: Authenticate
  publicBaseUrl: string
}

const security = [{ bearerAuth: [] }]

export async function petRoutes(
  app: FastifyInstance,
  { store, authenticate, publicBaseUrl }: PetRoutesOptions,
) {
  app.addHook('onRequest', bearerAuth(authenticate))

  app.get<{ Querystring: ListPetsQuery }>(
    '/pets',
    {
      schema: {
        operationId: 'listPets',
        summary: 'List all animals',
        description:
          'Animals in ascending id order, at most `limit` of them, optionally only those with `status`.',
        tags: ['pets'],
        security,
        querystring: ListPetsQuerySchema,
        response: {
          200: Type.Ref('Pets', { description: 'A page of animals.' }),
          ...errorResponses(...COMMON_ERRORS, 'invalid_query'),
        },
      },
    },
    async (request) =>
      store.listPets({ limit: request.query.limit ?? LIST_LIMIT.default, status: request.query.status }),
  )

  app.post<{ Body: NewPet }>(
    '/pets',
    {
      schema: {
        operationId: 'createPet',
        summary: 'Add an animal',
        description:
          'Stores the animal and returns it with the id the service assigned. `status` stays absent if absent.',
        tags: ['pets'],
        security,
        body: Type.Ref('NewPet'),
        response: {
          201: Type.Ref('Pet', {
            description: 'The created animal.',
            headers: {
              Location: { type: 'string', format: 'uri', description: 'The URL of the created animal.' },
            },
          }),
          ...errorResponses(
            ...COMMON_ERRORS,
            'malformed_json',
            'invalid_body',
            'body_too_large',
            'unsupported_media_type',
          ),
        },
      },
    },
    async (request, reply) => {
      const created = await store.createPet(request.body)
      return reply.code(201).header('location', `${publicBaseUrl}/pets/${created.id}`).send(created)
    },
  )

  app.get<{ Params: PetIdParams }>(
    '/pets/:petId',
    {
      schema: {
        operationId: 'getPet',
        summary: 'Get an animal (deprecated)',
        description:
          'Deprecated: scheduled for removal on 5 December 2030. Use `GET /pets` with a `status` filter instead.',
        deprecated: true,
        tags: ['pets'],
        security,
        params: PetIdParamsSchema,
        response: {
          200: Type.Ref('Pet', { description: 'The animal.' }),
          ...errorResponses(...COMMON_ERRORS, 'invalid_path_parameter', 'pet_not_found'),
        },
      },
    },
    async (request): Promise<Pet> => {
      const found = await store.getPet(request.params.petId)
      if (found === undefined) throw new ApiError('pet_not_found', `no pet has id ${request.params.petId}`)
      return found
    },
  )
}

/** Every other method on these paths answers 405 with `Allow` (see `guardMethods`). */
export async function petMethodGuards(app: FastifyInstance) {
  guardMethods(app, '/pets', ['GET', 'HEAD', 'POST'])
  guardMethods(app, '/pets/:petId', ['GET', 'HEAD'])
}
