import type { SQLInputValue } from 'node:sqlite'
import { INT64_MAX } from '../../schemas/int64.ts'
import type { NewPet, Pet } from '../../schemas/pet.ts'
import {
  type CreateOutcome,
  createOutcomes,
  idempotencyRecordsOf,
  outcomesWithoutWrites,
  planCreates,
  requestsToInsert,
} from '../shared/idempotent-batch.ts'
import { type CreatePetRequest, PetIdsExhaustedError } from '../store.ts'
import type { SqliteConnection } from './sqlite-connection.ts'
import { asStorageError, type StorageFault, StorageFaultError, storageFaultOf } from './sqlite-errors.ts'
import { storedIdempotencyRecords, writeIdempotencyRecord } from './sqlite-idempotency-queries.ts'
import { highestPetIdGiven, petById } from './sqlite-pet-queries.ts'

/** A create's result; while the volume takes no writes, also the refusal of one it cannot replay. */
export type SqliteCreateOutcome = CreateOutcome | StorageFaultError

/** A batch's results, and the fault that refused its writes if its replays were answered without them. */
export interface SqliteBatch {
  outcomes: SqliteCreateOutcome[]
  refusedBy?: StorageFaultError
}

// Faults under which the file can still be read: a retried create's pet can be found and given again.
const READABLE_FAULTS: ReadonlySet<StorageFault> = new Set(['disk_full', 'read_only', 'io_error'])

/**
 * Stores a batch of creates in one transaction (`BEGIN IMMEDIATE` … `COMMIT`, one sync): idempotency
 * records are read under the write lock and written with their pets. Runs on whichever thread owns `db`.
 * A batch the volume refuses (full, read-only, failing) still answers its replays.
 */
export function createPetBatch(db: SqliteConnection, requests: readonly CreatePetRequest[]): SqliteBatch {
  try {
    return { outcomes: writeBatch(db, requests) }
  } catch (error) {
    const refusal = asStorageError(error)
    const keyed = requests.some((request) => request.idempotency)
    if (!keyed || !(refusal instanceof StorageFaultError) || !READABLE_FAULTS.has(refusal.fault)) throw error
    try {
      return { outcomes: replaysOnly(db, requests, refusal), refusedBy: refusal }
    } catch (readError) {
      // Reads fail too: the write's error is the one that explains, but damage found, which outlasts it.
      throw storageFaultOf(readError) === 'corrupt' ? readError : error
    }
  }
}

/**
 * Each create whose key already has its record is answered with its pet, as a replay is, and one with
 * a key reused for another pet is refused as ever; every other create gets `refusal`. No transaction:
 * a record names a pet that was committed with it, and pets are never deleted.
 */
function replaysOnly(
  db: SqliteConnection,
  requests: readonly CreatePetRequest[],
  refusal: StorageFaultError,
): SqliteCreateOutcome[] {
  const plans = planCreates(requests, storedIdempotencyRecords(db, idempotencyRecordsOf(requests)))
  return outcomesWithoutWrites(plans, (petId) => petById(db, petId), refusal)
}

function writeBatch(db: SqliteConnection, requests: readonly CreatePetRequest[]): CreateOutcome[] {
  return db.transaction(() => {
    const plans = planCreates(requests, storedIdempotencyRecords(db, idempotencyRecordsOf(requests)))
    const toInsert = requestsToInsert(requests, plans)
    const inserted = insertPets(
      db,
      toInsert.map((request) => request.pet),
    )
    for (const [index, { idempotency }] of toInsert.entries()) {
      if (idempotency) writeIdempotencyRecord(db, idempotency, (inserted[index] as Pet).id)
    }
    const replayed = new Map<bigint, Pet>()
    for (const plan of plans) {
      if (plan.kind !== 'replay') continue
      const earlier = petById(db, plan.petId)
      if (earlier !== undefined) replayed.set(plan.petId, earlier)
    }
    return createOutcomes(plans, inserted, replayed)
  })
}

/** Rows per insert statement, largest first: a batch goes in chunks of these (seven prepared at most). */
const CHUNK_ROWS = [64, 32, 16, 8, 4, 2, 1]
// Written once: each chunk's statement text, which is also the key of its prepared statement.
const INSERT_SQL = new Map(
  CHUNK_ROWS.map((rows) => [
    rows,
    `INSERT INTO pets (id, name, category_id, status) VALUES ${'(?, ?, ?, ?), '.repeat(rows - 1)}(?, ?, ?, ?)`,
  ]),
)

/**
 * Inserts `pets` in statements of up to 64 rows, their ids dealt in order from the one AUTOINCREMENT would
 * give next (the batch holds the write lock); each is answered as sent plus its id, with no RETURNING
 * (docs/decisions.md, "SQLite creates: a batch's pets in a few multi-row inserts").
 */
function insertPets(db: SqliteConnection, pets: readonly NewPet[]): Pet[] {
  if (pets.length === 0) return []
  // The id AUTOINCREMENT would give next: above every id given out, even of pets since gone.
  const highest = highestPetIdGiven(db)
  if (highest > INT64_MAX - BigInt(pets.length)) throw new PetIdsExhaustedError()
  const first = highest + 1n
  const inserted = pets.map((pet, index): Pet => {
    const created: Pet = { id: first + BigInt(index), name: pet.name, categoryId: pet.categoryId }
    if (pet.status !== undefined) created.status = pet.status
    return created
  })
  for (let start = 0; start < inserted.length; ) {
    const rows = CHUNK_ROWS.find((size) => size <= inserted.length - start) as number
    const values: SQLInputValue[] = []
    for (const pet of inserted.slice(start, start + rows)) {
      values.push(pet.id, pet.name, pet.categoryId, pet.status ?? null)
    }
    db.statement(INSERT_SQL.get(rows) as string).run(...values)
    start += rows
  }
  return inserted
}
