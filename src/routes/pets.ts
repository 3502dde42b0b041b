import type { FastifyInstance } from 'fastify'
import Type from 'typebox'
import type { Authenticate } from '../auth/authenticator.ts'
import { ApiError } from '../errors.ts'
import { bearerAuth } from '../http/bearer-auth.ts'
import { methodNotAllowed } from '../http/error-handler.ts'
import {
  LIST_LIMIT,
  ListPetsQuery,
  type ListPetsQuery as ListPetsQueryType,
  type NewPet,
  type Pet,
  PetIdParams,
  type PetIdParams as PetIdParamsType,
} from '../schemas/pet.ts'
import type { Store } from '../store/store.ts'

export interface PetRoutesOptions {
  store: Store
  authenticate: Authenticate
  publicBaseUrl: string
}

const pet = (description: string) => Type.Ref('Pet', { description })
const error = (description: string) => Type.Ref('Error', { description })

const COMMON_ERRORS = {
  401: Type.Ref('Error', {
    description: 'Missing or invalid API key.',
    headers: { 'WWW-Authenticate': { type: 'string', description: 'The bearer challenge (RFC 6750).' } },
  }),
  500: error('Unexpected failure; the detail is in the server log.'),
  503: error('The store is unavailable or the service is shutting down; retry later.'),
}
const security = [{ bearerAuth: [] }]

export async function petRoutes(
  app: FastifyInstance,
  { store, authenticate, publicBaseUrl }: PetRoutesOptions,
) {
  app.addHook('onRequest', bearerAuth(authenticate))

  app.get<{ Querystring: ListPetsQueryType }>(
    '/pets',
    {
      schema: {
        operationId: 'listPets',
        summary: 'List all animals',
        description:
          'Animals in ascending id order, at most `limit` of them, optionally only those with `status`.',
        tags: ['pets'],
        security,
        querystring: ListPetsQuery,
        response: {
          200: Type.Ref('Pets', { description: 'A page of animals.' }),
          400: error('A query parameter is unknown, repeated or out of range.'),
          ...COMMON_ERRORS,
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
          400: error('The body is not valid JSON or breaks the NewPet schema.'),
          413: error('The body is over the size limit.'),
          415: error('The body is not application/json.'),
          ...COMMON_ERRORS,
        },
      },
    },
    async (request, reply) => {
      const created = await store.createPet(request.body)
      return reply.code(201).header('location', `${publicBaseUrl}/pets/${created.id}`).send(created)
    },
  )

  app.get<{ Params: PetIdParamsType }>(
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
        params: PetIdParams,
        response: {
          200: pet('The animal.'),
          400: error('petId is not an int64.'),
          404: error('No animal has this id.'),
          ...COMMON_ERRORS,
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

/**
 * Every other method on these paths answers 405 with `Allow` (HEAD comes with GET). It answers in onRequest,
 * before any body is read, so no body error can mask it.
 */
export async function petMethodGuards(app: FastifyInstance) {
  const guard = (url: string, allowed: string[]) => {
    const reject = methodNotAllowed(allowed)
    app.route({
      method: app.supportedMethods.filter((method) => !allowed.includes(method)),
      url,
      schema: { hide: true },
      onRequest: reject,
      handler: reject,
    })
  }
  guard('/pets', ['GET', 'HEAD', 'POST'])
  guard('/pets/:petId', ['GET', 'HEAD'])
}
