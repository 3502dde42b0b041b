import type { Pet } from '../../schemas/pet.ts'
import { type CreateOutcome, createOutcomes, planCreates } from '../shared/idempotent-batch.ts'
import type { CreatePetRequest } from '../store.ts'
import type { SqliteConnection } from './sqlite-connection.ts'
import { storedIdempotencyRecords, writeIdempotencyRecord } from './sqlite-idempotency-queries.ts'
import { petById } from './sqlite-pet-queries.ts'

/**
 * Stores a batch of creates in one transaction (`BEGIN IMMEDIATE` … `COMMIT`, one sync): idempotency
 * records are read under the write lock and written with their pets. Runs on whichever thread owns `db`.
 */
export function createPetBatch(db: SqliteConnection, requests: readonly CreatePetRequest[]): CreateOutcome[] {
  return db.transaction(() => {
    const records = requests.flatMap(({ idempotency }) => (idempotency ? [idempotency] : []))
    const plans = planCreates(requests, storedIdempotencyRecords(db, records))
    // The new pet is what was sent plus its id: names are well-formed Unicode and the table is STRICT, so
    // SQLite stores each value exactly, and skipping RETURNING saves a result row per insert.
    const insertPet = db.statement('INSERT INTO pets (name, category_id, status) VALUES (?, ?, ?)')
    const inserted: Pet[] = []
    const replayed = new Map<bigint, Pet>()
    for (const [index, plan] of plans.entries()) {
      const { pet, idempotency } = requests[index] as CreatePetRequest
      if (plan.kind === 'replay') {
        const earlier = petById(db, plan.petId)
        if (earlier !== undefined) replayed.set(plan.petId, earlier)
      }
      if (plan.kind !== 'insert') continue
      const { lastInsertRowid } = insertPet.run(pet.name, pet.categoryId, pet.status ?? null)
      const created: Pet = { id: BigInt(lastInsertRowid), name: pet.name, categoryId: pet.categoryId }
      if (pet.status !== undefined) created.status = pet.status
      inserted.push(created)
      if (idempotency) writeIdempotencyRecord(db, idempotency, created.id)
    }
    return createOutcomes(plans, inserted, replayed)
  })
}
