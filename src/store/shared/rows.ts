import type { Pet, PetStatus } from '../../schemas/pet.ts'
import { type ApiKeyRecord, idempotencyRecordId } from '../store.ts'
import type { StoredIdempotencyRecord } from './idempotent-batch.ts'

/** A pet row's columns, in PetRow's order: what both engines select. */
export const PET_COLUMNS = 'id, name, category_id, status'

/** An idempotency record row's columns, named in every insert so no migration can shift a value. */
export const IDEMPOTENCY_COLUMNS = 'api_key_id, idempotency_key, fingerprint, pet_id, expires_at_ms'

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
  deprecated_calls: bigint
  last_deprecated_call_at: string | null
}

/** An idempotency record row. */
export interface IdempotencyRecordRow {
  api_key_id: bigint
  idempotency_key: string
  fingerprint: string
  pet_id: bigint
  expires_at_ms: bigint
}

export function petFromRow(row: PetRow): Pet {
  const pet: Pet = { id: row.id, name: row.name, categoryId: row.category_id }
  // A pet created without a status has none: the property is left out, never set to null.
  if (row.status !== null) pet.status = row.status
  return pet
}

export function keyRecordFromRow(row: KeyRow): ApiKeyRecord {
  const record: ApiKeyRecord = {
    id: row.id,
    name: row.name,
    hint: row.hint,
    createdAt: row.created_at,
    deprecatedCalls: Number(row.deprecated_calls),
  }
  if (row.revoked_at !== null) record.revokedAt = row.revoked_at
  if (row.last_deprecated_call_at !== null) record.lastDeprecatedCallAt = row.last_deprecated_call_at
  return record
}

/** The stored idempotency records of a batch, by record id, as `planCreates` reads them. */
export function idempotencyRecordsFromRows(
  rows: readonly IdempotencyRecordRow[],
): Map<string, StoredIdempotencyRecord> {
  return new Map(
    rows.map((row) => [
      idempotencyRecordId(row.api_key_id, row.idempotency_key),
      { fingerprint: row.fingerprint, petId: row.pet_id, expiresAtMs: Number(row.expires_at_ms) },
    ]),
  )
}
