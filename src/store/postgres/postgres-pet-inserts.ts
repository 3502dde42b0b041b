import type { NewPet, Pet } from '../../schemas/pet.ts'
import { type CreateOutcome, createOutcomes, planCreates } from '../shared/idempotent-batch.ts'
import { type PetRow, petFromRow } from '../shared/rows.ts'
import type { CreatePetRequest } from '../store.ts'
import type { PostgresPool, Queryable } from './postgres-connection.ts'
import { storedIdempotencyRecords, writeIdempotencyRecords } from './postgres-idempotency-queries.ts'
import { PET_COLUMNS, petsById } from './postgres-pet-queries.ts'

/**
 * Arbitrary, fixed key of the advisory lock every batch of inserts takes, on every instance. Ids are drawn
 * from the sequence only while it is held, and it is released by the commit, so a batch with lower ids is
 * always visible before one with higher ids: a reader that has seen id N never later finds a new pet below N.
 */
const INSERT_LOCK = 0x7065_7473_0002n

/**
 * One transaction for a whole batch of creates, under the insert lock: the batch's idempotency records
 * are read, the new pets inserted in one statement, and their records written, all committed together.
 * `since` is when the oldest create of the batch arrived: the batch is answered within one bound of it.
 */
export function createPetBatch(
  pool: PostgresPool,
  requests: readonly CreatePetRequest[],
  since?: number,
): Promise<CreateOutcome[]> {
  return pool.transaction(async (client) => {
    await client.query('SELECT pg_advisory_xact_lock($1)', [INSERT_LOCK])
    const records = requests.flatMap(({ idempotency }) => (idempotency ? [idempotency] : []))
    const plans = planCreates(requests, await storedIdempotencyRecords(client, records))
    const toInsert = requests.filter((_, index) => plans[index]?.kind === 'insert')
    const inserted = await insertPets(
      client,
      toInsert.map((request) => request.pet),
    )
    await writeIdempotencyRecords(
      client,
      toInsert.flatMap(({ idempotency }, index) =>
        idempotency ? [{ record: idempotency, petId: (inserted[index] as Pet).id }] : [],
      ),
    )
    const replayIds = plans.flatMap((plan) => (plan.kind === 'replay' ? [plan.petId] : []))
    return createOutcomes(plans, inserted, await petsById(client, replayIds))
  }, since)
}

/**
 * Inserts `pets` in one statement and returns them in the same order, each with its new id. The pairing
 * is made by construction, not inferred: the statement draws one id per pet from the identity sequence,
 * deals them out in ascending order to the pets' positions (`n`), inserts each pet with its own id, and
 * returns every row with its position. (Nothing in PostgreSQL promises that identity values follow an
 * INSERT … SELECT's ORDER BY, so the ids are never matched to pets by sorting them.)
 */
async function insertPets(client: Queryable, pets: readonly NewPet[]): Promise<Pet[]> {
  if (pets.length === 0) return []
  const { rows } = await client.query<PetRow & { n: bigint }>({
    name: 'pets.insert',
    text: `WITH input AS (
             SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[])
               WITH ORDINALITY AS t(name, category_id, status, n)
           ), dealt AS (
             SELECT id, row_number() OVER (ORDER BY id) AS n
             FROM (SELECT nextval(pg_get_serial_sequence('pets', 'id')) AS id FROM input) AS drawn
           ), inserted AS (
             INSERT INTO pets (id, name, category_id, status) OVERRIDING SYSTEM VALUE
             SELECT dealt.id, input.name, input.category_id, input.status FROM input JOIN dealt USING (n)
             RETURNING ${PET_COLUMNS}
           )
           SELECT dealt.n, inserted.* FROM inserted JOIN dealt USING (id)`,
    values: [
      pets.map((p) => p.name),
      pets.map((p) => p.categoryId.toString()),
      pets.map((p) => p.status ?? null),
    ],
  })
  const byPosition = new Array<Pet | undefined>(pets.length).fill(undefined)
  for (const row of rows) byPosition[Number(row.n) - 1] = petFromRow(row)
  if (rows.length !== pets.length || byPosition.includes(undefined)) {
    throw new Error(`inserted ${rows.length} pets for ${pets.length} creates`)
  }
  return byPosition as Pet[]
}
