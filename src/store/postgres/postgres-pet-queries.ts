import { INT64_MIN } from '../../schemas/int64.ts'
import type { Pet } from '../../schemas/pet.ts'
import { PET_COLUMNS, type PetRow, petFromRow } from '../shared/rows.ts'
import type { PetQuery } from '../store.ts'
import type { PostgresPool } from './postgres-connection.ts'
import { highestIdGiven } from './postgres-sequences.ts'
import type { Queryable, Statement } from './postgres-statements.ts'

/**
 * The statement behind a page of pets. Keyset paging: `id > afterId` walks the primary key (or the
 * (status, id) index) from the cursor, so a page costs the same wherever it is; no OFFSET scans.
 * Exported so a test can EXPLAIN exactly what the store runs.
 */
export function listPetsStatement({ limit, status, afterId = INT64_MIN }: PetQuery): Statement {
  return status === undefined
    ? {
        name: 'pets.list',
        text: `SELECT ${PET_COLUMNS} FROM pets WHERE id > $1 ORDER BY id LIMIT $2`,
        values: [afterId, limit],
      }
    : {
        name: 'pets.list-status',
        // Means `status = $1 AND id > $2 ORDER BY id`, spelled as a range of (status, id) so that the
        // (status, id) index is the only way to it without a sort. Spelled plainly, the generic plan
        // PostgreSQL adopts once a named statement has run a few times may walk the primary key and skip
        // other statuses' rows: the whole table, for the last page of a rare status.
        text: `SELECT ${PET_COLUMNS} FROM pets
               WHERE (status, id) > ($1, $2) AND (status, id) <= ($1, 9223372036854775807)
               ORDER BY status, id LIMIT $3`,
        values: [status, afterId, limit],
      }
}

export async function listPets(pool: PostgresPool, query: PetQuery): Promise<Pet[]> {
  return (await pool.query<PetRow>(listPetsStatement(query), { reads: true })).map(petFromRow)
}

export async function getPet(pool: PostgresPool, id: bigint): Promise<Pet | undefined> {
  const [row] = await pool.query<PetRow>(
    { name: 'pets.get', text: `SELECT ${PET_COLUMNS} FROM pets WHERE id = $1`, values: [id] },
    { reads: true },
  )
  return row === undefined ? undefined : petFromRow(row)
}

/** The pets with these ids (those that exist), by id. */
export async function petsById(client: Queryable, ids: readonly bigint[]): Promise<Map<bigint, Pet>> {
  if (ids.length === 0) return new Map()
  const { rows } = await client.query<PetRow>({
    name: 'pets.get-many',
    text: `SELECT ${PET_COLUMNS} FROM pets WHERE id = ANY($1::bigint[])`,
    values: [ids.map(String)],
  })
  return new Map(rows.map((row) => [row.id, petFromRow(row)]))
}

/** The highest pet id given out: the highest row, or the sequence's mark when ids were drawn past it. */
export async function highestPetIdGiven(pool: PostgresPool): Promise<bigint> {
  const [row] = await pool.query<{ id: bigint }>(highestIdGiven('pets'))
  return row?.id ?? 0n
}
