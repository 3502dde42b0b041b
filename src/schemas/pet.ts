import Type, { type Static } from 'typebox'
import { Int64 } from './int64.ts'
import { withAllowedForm } from './schema-rules.ts'

const PET_NAME_MAX_LENGTH = 100
export const LIST_LIMIT = { minimum: 1, maximum: 100, default: 20 } as const

const PetStatusSchema = Type.Enum(['available', 'pending', 'sold'], {
  $id: 'PetStatus',
  type: 'string',
  description: 'Availability of the animal in the store.',
})
export type PetStatus = Static<typeof PetStatusSchema>

/**
 * Where a pet's status appears (Pet, NewPet, the list's filter): a reference to the one named schema, so the
 * document has one PetStatus and generators make one enum of it.
 */
const PetStatusRef = Type.Unsafe<PetStatus>(Type.Ref('PetStatus'))

// Control characters and unpaired surrogates cannot be stored or shown faithfully (SQLite and UTF-8 would
// replace them), so they are refused rather than silently changed.
const CONTROL = /\p{Cc}/u
// Something a person can see: not white space, a control, an invisible format character (U+200B…), a
// character Unicode says to render as nothing (Hangul fillers, variation selectors), the Braille blank
// (a symbol with no dots, used as a space that trimming keeps) or a noncharacter. Unassigned characters
// outside those ranges count as visible: they may be emoji newer than this runtime's Unicode tables.
const VISIBLE =
  /[^\p{White_Space}\p{Cc}\p{Cf}\p{Default_Ignorable_Code_Point}\p{Noncharacter_Code_Point}\u2800]/u
const isPresentableName = (name: string) => name.isWellFormed() && !CONTROL.test(name) && VISIBLE.test(name)

const PetName = Type.Refine(
  Type.String({
    minLength: 1,
    maxLength: PET_NAME_MAX_LENGTH,
    description: `The animal's name: 1 to ${PET_NAME_MAX_LENGTH} Unicode characters, at least one of them visible (not only spaces or invisible characters), no control characters (C0, DEL, C1). Stored exactly as sent (never trimmed).`,
  }),
  isPresentableName,
  () => 'must have a visible character and no control characters or unpaired surrogates',
)

const petFields = {
  name: PetName,
  categoryId: Int64({ description: 'Identifier of the category the animal belongs to.' }),
  status: Type.Optional(PetStatusRef),
}

const NewPetSchema = Type.Object(petFields, {
  $id: 'NewPet',
  additionalProperties: false,
  description: 'An animal to add. Unknown properties (including `id`) are rejected.',
  // What "Try it out" starts from, and generators show: a pet as a client would send it.
  examples: [{ name: 'Rex', categoryId: 1, status: 'available' }],
})
export type NewPet = Static<typeof NewPetSchema>

const PetSchema = Type.Object(
  { id: Int64({ description: 'Unique identifier assigned by the service on creation.' }), ...petFields },
  {
    $id: 'Pet',
    // Open, as every response body: new response fields are additive (docs/versioning.md).
    description: 'An animal of the catalogue. Fields may be added in /v1: ignore those you do not know.',
    examples: [{ id: 1, name: 'Rex', categoryId: 1, status: 'available' }],
  },
)
export type Pet = Static<typeof PetSchema>

const PetsSchema = Type.Array(Type.Ref('Pet'), {
  $id: 'Pets',
  // A page holds at most the largest `limit`.
  maxItems: LIST_LIMIT.maximum,
  description: 'Animals, ordered by id.',
})

export const PetIdParamsSchema = Type.Object(
  { petId: Int64({ description: 'The identifier of the animal to retrieve.' }) },
  { additionalProperties: false },
)
export type PetIdParams = Static<typeof PetIdParamsSchema>

export const ListPetsQuerySchema = Type.Object(
  {
    limit: Type.Optional(
      Type.Integer({ ...LIST_LIMIT, format: 'int32', description: 'Maximum number of animals returned.' }),
    ),
    status: Type.Optional(PetStatusRef),
    cursor: Type.Optional(
      withAllowedForm(
        Type.String({
          minLength: 1,
          maxLength: 200,
          pattern: '^[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+$',
          description:
            'Where the page starts: copy it from the `Link: <…>; rel="next"` of the previous page. Opaque and signed; ' +
            'it must be sent with the same `status` as the page it came from.',
        }),
        'the cursor of a next link, copied unchanged',
      ),
    ),
  },
  { additionalProperties: false },
)
export type ListPetsQuery = Static<typeof ListPetsQuerySchema>

/** Operations that take no query parameter still refuse one, so a misplaced or misspelt option is not ignored. */
export const NoQuerySchema = Type.Object({}, { additionalProperties: false })

/** The schemas registered once with the app; routes and the OpenAPI document refer to them by `$id`. */
export const petSchemas = [PetStatusSchema, NewPetSchema, PetSchema, PetsSchema]
