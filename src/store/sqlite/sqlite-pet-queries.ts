import { INT64_MIN } from '../../schemas/int64.ts'
import type { Pet } from '../../schemas/pet.ts'
import { PET_COLUMNS, type PetRow, petFromRow } from '../shared/rows.ts'
import type { PetQuery } from '../store.ts'
import type { SqliteConnection } from './sqlite-connection.ts'
import { highestIdGiven } from './sqlite-sequences.ts'

/** The keyset page queries (exported so a test can check their plans: index walks, never scans). */
export const LIST_PETS_SQL = {
  all: `SELECT ${PET_COLUMNS} FROM pets WHERE id > ? ORDER BY id LIMIT ?`,
  byStatus: `SELECT ${PET_COLUMNS} FROM pets WHERE status = ? AND id > ? ORDER BY id LIMIT ?`,
}

/** The highest pet id ever given out: of the pets there, or of pets since gone (AUTOINCREMENT's sequence). */
export function highestPetIdGiven(db: SqliteConnection): bigint {
  return highestIdGiven((sql) => db.statement(sql), 'pets')
}

/** One pet by id, on whichever thread owns `db` (getPet, and a replayed create inside its batch). */
export function petById(db: SqliteConnection, id: bigint): Pet | undefined {
  const row = db.statement(`SELECT ${PET_COLUMNS} FROM pets WHERE id = ?`).get(id)
  return row === undefined ? undefined : petFromRow(row as unknown as PetRow)
}

export function getPet(db: SqliteConnection, id: bigint): Promise<Pet | undefined> {
  return db.run(() => petById(db, id))
}

/** Keyset paging: `id > afterId` walks the primary key (or the (status, id) index); no OFFSET scans. */
export function listPets(
  db: SqliteConnection,
  { limit, status, afterId = INT64_MIN }: PetQuery,
): Promise<Pet[]> {
  return db.run(() => {
    const rows =
      status === undefined
        ? db.statement(LIST_PETS_SQL.all).all(afterId, limit)
        : db.statement(LIST_PETS_SQL.byStatus).all(status, afterId, limit)
    return (rows as unknown as PetRow[]).map(petFromRow)
  })
}
