import Type, { type Static } from 'typebox'
import { Int64 } from './int64.ts'

export const PET_NAME_MAX_LENGTH = 100
export const LIST_LIMIT = { minimum: 1, maximum: 100, default: 20 } as const

export const PetStatus = Type.Enum(['available', 'pending', 'sold'], {
  $id: 'PetStatus',
  type: 'string',
  description: 'Availability of the animal in the store.',
})
export type PetStatus = Static<typeof PetStatus>

// Control characters and unpaired surrogates cannot be stored or shown faithfully (SQLite and UTF-8 would
// replace them), so they are refused rather than silently changed.
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this rejects
const UNPRINTABLE = /[\u0000-\u001f\u007f]/
const isPresentableName = (name: string) =>
  name.isWellFormed() && !UNPRINTABLE.test(name) && name.trim() !== ''

const PetName = Type.Refine(
  Type.String({
    minLength: 1,
    maxLength: PET_NAME_MAX_LENGTH,
    description: `The animal's name: 1 to ${PET_NAME_MAX_LENGTH} Unicode characters, not only spaces, no control characters. Stored exactly as sent (never trimmed).`,
  }),
  isPresentableName,
  () => 'must not be blank or contain control characters or unpaired surrogates',
)

const petFields = {
  name: PetName,
  categoryId: Int64({ description: 'Identifier of the category the animal belongs to.' }),
  status: Type.Optional(PetStatus),
}

export const NewPet = Type.Object(petFields, {
  $id: 'NewPet',
  additionalProperties: false,
  description: 'An animal to add. Unknown properties (including `id`) are rejected.',
})
export type NewPet = Static<typeof NewPet>

export const Pet = Type.Object(
  { id: Int64({ description: 'Unique identifier assigned by the service on creation.' }), ...petFields },
  { $id: 'Pet', additionalProperties: false, description: 'An animal of the catalogue.' },
)
export type Pet = Static<typeof Pet>

export const Pets = Type.Array(Type.Ref('Pet'), { $id: 'Pets', description: 'Animals, ordered by id.' })

export const PetIdParams = Type.Object(
  { petId: Int64({ description: 'The identifier of the animal to retrieve.' }) },
  { additionalProperties: false },
)
export type PetIdParams = Static<typeof PetIdParams>

export const ListPetsQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ ...LIST_LIMIT, description: 'Maximum number of animals returned.' })),
    status: Type.Optional(PetStatus),
  },
  { additionalProperties: false },
)
export type ListPetsQuery = Static<typeof ListPetsQuery>

/** The schemas registered once with the app; routes and the OpenAPI document refer to them by `$id`. */
export const petSchemas = [PetStatus, NewPet, Pet, Pets]
