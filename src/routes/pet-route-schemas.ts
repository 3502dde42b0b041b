import Type from 'typebox'
import { COMMON_ERRORS, errorResponses } from '../http/error-responses.ts'
import { responseHeader } from '../http/response-headers.ts'
import { ListPetsQuerySchema, NoQuerySchema, PetIdParamsSchema } from '../schemas/pet.ts'

// Documentation and validation of the three operations; the handlers are in pets.ts.

const security = [{ bearerAuth: [] }]
const etag = responseHeader('Strong validator of this exact response; send it back in If-None-Match.')
const cacheControl = responseHeader(
  '`private, no-cache`: clients may keep the response but must revalidate it.',
)
const notModified = {
  304: Type.Null({ description: 'Not modified: the If-None-Match tag still holds.' }),
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
    200: Type.Ref('Pets', {
      description: 'A page of animals.',
      headers: {
        Link: responseHeader('`<…>; rel="next"`: the next page, present only when more pets follow.', {
          required: false,
        }),
        ETag: etag,
        'Cache-Control': cacheControl,
      },
    }),
    ...notModified,
    ...errorResponses(...COMMON_ERRORS, 'invalid_query'),
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
  headers: Type.Object({
    'idempotency-key': Type.Optional(
      Type.String({
        description:
          'Makes the create safe to retry: 1 to 255 printable ASCII characters (bare, or a quoted string as in ' +
          'the IETF draft), unique per API key. Kept 24 hours (`IDEMPOTENCY_RETENTION_S`). The same key with the ' +
          'same pet replays the first 201 (with `Idempotent-Replayed: true`); with a different pet it is 422; ' +
          'while the first request is still running it is 409.',
      }),
    ),
  }),
  body: Type.Ref('NewPet'),
  response: {
    201: Type.Ref('Pet', {
      description:
        'The created animal (or, for a replayed Idempotency-Key, the animal created the first time).',
      headers: {
        Location: responseHeader(
          'The URL of the created animal (relative when no public base URL is known).',
          {
            format: 'uri-reference',
          },
        ),
        'Idempotent-Replayed': responseHeader('`true` when this is the replay of an earlier create.', {
          required: false,
        }),
      },
    }),
    ...errorResponses(
      ...COMMON_ERRORS,
      'malformed_json',
      'invalid_body',
      'invalid_idempotency_key',
      'idempotency_key_in_flight',
      'body_too_large',
      'unsupported_media_type',
      'idempotency_key_reused',
      'invalid_query',
    ),
  },
}

const deprecationHeaders = {
  Deprecation: responseHeader('`@<epoch seconds>` (RFC 9745): when this operation was deprecated.'),
  Sunset: responseHeader('`Thu, 05 Dec 2030 00:00:00 GMT` (RFC 8594): when this operation is removed.'),
  Link: responseHeader('`<…/pets>; rel="successor-version"`: the operation to use instead.'),
}

export const getPetSchema = {
  operationId: 'getPet',
  summary: 'Get an animal (deprecated)',
  description:
    'Deprecated: scheduled for removal on 5 December 2030. Use `GET /pets` with a `status` filter instead. Every ' +
    'response carries `Deprecation`, `Sunset` and a `Link` to the successor; calls are counted per API key.',
  deprecated: true,
  tags: ['pets'],
  security,
  querystring: NoQuerySchema,
  params: PetIdParamsSchema,
  response: {
    200: Type.Ref('Pet', {
      description: 'The animal.',
      headers: { ...deprecationHeaders, ETag: etag, 'Cache-Control': cacheControl },
    }),
    ...notModified,
    ...errorResponses(...COMMON_ERRORS, 'invalid_query', 'invalid_path_parameter', 'pet_not_found', 'gone'),
  },
}
