import type { components } from './openapi-types.ts'

type Pet = components['schemas']['Pet']
type PetStatus = components['schemas']['PetStatus']

// Every status the document lists, as a record of exactly PetStatus: a status added there (after
// `npm run client:generate`) fails the type check here instead of being refused at run time.
const STATUSES: Record<PetStatus, true> = { available: true, pending: true, sold: true }

/**
 * Whether `value` is a pet as the document defines it: its int64s exact bigints, its name a string, its
 * status one of the document's (the enum is closed: docs/versioning.md). A field this client does not
 * know is let be: a later minor version may add one.
 */
export function isPet(value: unknown): value is Pet {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false
  const { id, name, categoryId, status } = value as Record<string, unknown>
  return (
    typeof id === 'bigint' &&
    typeof name === 'string' &&
    typeof categoryId === 'bigint' &&
    (status === undefined || (typeof status === 'string' && Object.hasOwn(STATUSES, status)))
  )
}
