import type { Pet } from '../../schemas/pet.ts'
import { type CreateOutcome, createOutcomes, planCreates } from '../idempotent-batch.ts'
import { type ClaimRow, claimsFromRows, type PetRow, petFromRow } from '../rows.ts'
import type { CreatePetRequest } from '../store.ts'
import type { SqliteConnection } from './sqlite-connection.ts'

export const PET_COLUMNS = 'id, name, category_id, status'
/** One pet by id: getPet, and a replayed create inside the batch's transaction. */
export const PET_BY_ID_SQL = `SELECT ${PET_COLUMNS} FROM pets WHERE id = ?`

/**
 * Stores a batch of creates in one transaction (`BEGIN IMMEDIATE` … `COMMIT`, one sync): idempotency
 * records are read under the write lock and written with their pets. Runs on whichever thread owns `db`.
 */
export function insertPets(db: SqliteConnection, requests: readonly CreatePetRequest[]): CreateOutcome[] {
  return db.transaction(() => {
    const findClaim = db.statement(
      'SELECT * FROM idempotency_keys WHERE api_key_id = ? AND idempotency_key = ?',
    )
    const claims = requests.flatMap(({ idempotency: claim }) => {
      const row = claim ? findClaim.get(claim.apiKeyId, claim.key) : undefined
      return row === undefined ? [] : [row as unknown as ClaimRow]
    })
    const plans = planCreates(requests, claimsFromRows(claims))
    // The new pet is what was sent plus its id: names are well-formed Unicode and the table is STRICT, so
    // SQLite stores each value exactly, and skipping RETURNING saves a result row per insert.
    const insertPet = db.statement('INSERT INTO pets (name, category_id, status) VALUES (?, ?, ?)')
    const recordClaim = db.statement(`INSERT INTO idempotency_keys VALUES (?, ?, ?, ?, ?)
      ON CONFLICT (api_key_id, idempotency_key) DO UPDATE SET
        fingerprint = excluded.fingerprint, pet_id = excluded.pet_id, expires_at_ms = excluded.expires_at_ms`)
    const inserted: Pet[] = []
    const replayed = new Map<bigint, Pet>()
    for (const [index, plan] of plans.entries()) {
      const { pet, idempotency: claim } = requests[index] as CreatePetRequest
      if (plan.kind === 'replay') {
        const row = db.statement(PET_BY_ID_SQL).get(plan.petId)
        if (row !== undefined) replayed.set(plan.petId, petFromRow(row as unknown as PetRow))
      }
      if (plan.kind !== 'insert') continue
      const { lastInsertRowid } = insertPet.run(pet.name, pet.categoryId, pet.status ?? null)
      const created: Pet = { id: BigInt(lastInsertRowid), name: pet.name, categoryId: pet.categoryId }
      if (pet.status !== undefined) created.status = pet.status
      inserted.push(created)
      if (claim) recordClaim.run(claim.apiKeyId, claim.key, claim.fingerprint, created.id, claim.expiresAtMs)
    }
    return createOutcomes(plans, inserted, replayed)
  })
}
