import type { Pet, PetStatus } from '../schemas/pet.ts'
import type { ApiKeyRecord } from './store.ts'

/** A pet as both engines return it: integers as bigint, a missing status as NULL. */
export interface PetRow {
  id: bigint
  name: string
  category_id: bigint
  status: PetStatus | null
}

/** An API key row; timestamps as ISO 8601 UTC text. */
export interface KeyRow {
  id: bigint
  name: string
  hint: string
  created_at: string
  revoked_at: string | null
}

export function petFromRow(row: PetRow): Pet {
  const pet: Pet = { id: row.id, name: row.name, categoryId: row.category_id }
  // A pet created without a status has none: the property is left out, never set to null.
  if (row.status !== null) pet.status = row.status
  return pet
}

export function keyRecordFromRow(row: KeyRow): ApiKeyRecord {
  const record: ApiKeyRecord = { id: row.id, name: row.name, hint: row.hint, createdAt: row.created_at }
  if (row.revoked_at !== null) record.revokedAt = row.revoked_at
  return record
}
