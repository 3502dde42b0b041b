import Type from 'typebox'
import { GET_PET_SUNSET_AT_MS, GET_PET_SUNSET_DAY, httpDate } from '../../pets/get-pet-deprecation.ts'
import { ListPetsQuerySchema, NoQuerySchema, PetIdParamsSchema } from '../../schemas/pet.ts'
import { COMMON_ERRORS, COUNTED_HEADERS, errorResponses, NOT_STORED } from '../openapi/error-responses.ts'
import { linkHeader, responseHeader, URL_REFERENCE } from '../openapi/response-headers.ts'
import { IdempotencyKeySchema } from './idempotency-key-header.ts'

// Documentation and validation of the three operations; the handlers are in pet-routes.ts.

const security = [{ bearerAuth: [] }]
const etag = responseHeader('Strong validator of this exact response; send it back in If-None-Match.', {
  maxLength: 64,
  pattern: '^"[!#-~]+"$',
})
const cacheControl = responseHeader('Clients may keep the response but must revalidate it.', {
  enum: ['private, no-cache'],
})
const cachedRead = { ETag: etag, 'Cache-Control': cacheControl, ...COUNTED_HEADERS }
const notModified = (headers: Record<string, object>) => ({
  304: Type.Null({ description: 'Not modified: the If-None-Match tag still holds.', headers }),
})

// A 304 carries them too: the page's next link is part of what its tag stands for.
const pageHeaders = {
  Link: responseHeader('The next page, present only when more pets follow.', linkHeader('next'), {
    required: false,
  }),
  ...cachedRead,
}

export const listPetsSchema = {
  operationId: 'listPets',
  summary: 'List all animals',
  description:
    'Animals in ascending id order, at most `limit` of them, optionally only those with `status`. When more follow, ' +
    'the `Link` header (RFC 8288) carries the URL of the next page (`rel="next"`); following it walks the whole ' +
    'catalogue without duplicates or gaps, even while pets are added. Each page costs the same however deep.',
  tags: ['pets'],
  security,
  querystring: ListPetsQuerySchema,
  response: {
    200: Type.Ref('Pets', { description: 'A page of animals.', headers: pageHeaders }),
    ...notModified(pageHeaders),
    ...errorResponses([...COMMON_ERRORS, 'invalid_query']),
  },
}

export const createPetSchema = {
  operationId: 'createPet',
  summary: 'Add an animal',
  description:
    'Stores the animal and returns it with the id the service assigned; `status` stays absent if absent. With an ' +
    '`Idempotency-Key`, a retry of the same request returns the first result instead of creating another pet.',
  tags: ['pets'],
  security,
  querystring: NoQuerySchema,
  headers: Type.Object({ 'idempotency-key': Type.Optional(IdempotencyKeySchema) }),
  body: Type.Ref('NewPet'),
  response: {
    201: Type.Ref('Pet', {
      description:
        'The created animal (or, for a replayed Idempotency-Key, the animal created the first time).',
      headers: {
        Location: responseHeader(
          "The URL of the created animal (relative when no public base URL is known): the animal's identity. " +
            'Reading it is getPet, deprecated and scheduled for removal on 5 December 2030; the animal is in listPets.',
          URL_REFERENCE,
        ),
        'Idempotent-Replayed': responseHeader(
          'Present, `true`, when this is the replay of an earlier create.',
          { enum: ['true'] },
          { required: false },
        ),
        ...COUNTED_HEADERS,
        ...NOT_STORED,
      },
    }),
    ...errorResponses([
      ...COMMON_ERRORS,
      'malformed_json',
      'invalid_body',
      'invalid_idempotency_key',
      'idempotency_key_in_flight',
      'body_too_large',
      'unsupported_media_type',
      'idempotency_key_reused',
      'invalid_query',
      'pet_ids_exhausted',
    ]),
  },
}

/** Sent on every answer of getPet (errors included) but those refused before it runs (overload, HTTP layer). */
function deprecationHeaderSchemas(required: boolean) {
  return {
    Deprecation: responseHeader(
      '`@<epoch seconds>` (RFC 9745): when this operation was deprecated.',
      { maxLength: 17, pattern: '^@[0-9]{1,15}$' },
      { required },
    ),
    Sunset: responseHeader(
      `\`${httpDate(GET_PET_SUNSET_AT_MS)}\` (RFC 8594): when this operation is removed.`,
      {
        maxLength: 29,
        pattern: '^[A-Z][a-z]{2}, [0-9]{2} [A-Z][a-z]{2} [0-9]{4} [0-9]{2}:[0-9]{2}:[0-9]{2} GMT$',
      },
      { required },
    ),
    Link: responseHeader(
      '`<…/pets>; rel="successor-version"`: the operation to use instead.',
      linkHeader('successor-version'),
      { required },
    ),
  }
}

const getPetHeaders = { ...deprecationHeaderSchemas(true), ...cachedRead }

export const getPetSchema = {
  operationId: 'getPet',
  summary: `Get an animal (deprecated: scheduled for removal on ${GET_PET_SUNSET_DAY})`,
  description:
    `Deprecated: scheduled for removal on ${GET_PET_SUNSET_DAY}. Use \`GET /pets\` with a \`status\` filter instead. Every ` +
    'response carries `Deprecation`, `Sunset` and a `Link` to the successor; calls are counted per API key.',
  deprecated: true,
  tags: ['pets'],
  security,
  querystring: NoQuerySchema,
  params: PetIdParamsSchema,
  response: {
    200: Type.Ref('Pet', { description: 'The animal.', headers: getPetHeaders }),
    ...notModified(getPetHeaders),
    ...errorResponses(
      [...COMMON_ERRORS, 'invalid_query', 'invalid_path_parameter', 'pet_not_found', 'gone'],
      deprecationHeaderSchemas(false),
    ),
  },
}
