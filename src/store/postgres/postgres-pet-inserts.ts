import { StoreUnavailableError, WriteInDoubtError } from '../../errors.ts'
import type { NewPet, Pet } from '../../schemas/pet.ts'
import {
  type CreateOutcome,
  type CreatePlan,
  createOutcomes,
  idempotencyRecordsOf,
  outcomesWithoutWrites,
  planCreates,
  requestsToInsert,
} from '../shared/idempotent-batch.ts'
import { IDEMPOTENCY_COLUMNS, PET_COLUMNS, type PetRow, petFromRow } from '../shared/rows.ts'
import { type CreatePetRequest, type IdempotencyRecord, PetIdsExhaustedError } from '../store.ts'
import type { PostgresPool } from './postgres-connection.ts'
import { refusedWrites } from './postgres-errors.ts'
import { storedIdempotencyRecords } from './postgres-idempotency-queries.ts'
import { petsById } from './postgres-pet-queries.ts'
import type { Statement } from './postgres-statements.ts'

/** A create's result; while the database refuses writes, also the refusal of one it cannot replay. */
export type PostgresCreateOutcome = CreateOutcome | StoreUnavailableError

/**
 * Arbitrary, fixed key of the advisory lock every batch of inserts takes, on every instance. Ids are drawn
 * from the sequence only while it is held, and it is released by the commit, so a batch with lower ids is
 * always visible before one with higher ids: a reader that has seen id N never later finds a new pet below N.
 */
const INSERT_LOCK = 0x7065_7473_0002n

/**
 * A batch of creates under the insert lock, answered within one bound from `since`: first tried as if no
 * key had a record (one statement), then, if the records' key or the sequence refuses it, again reading the
 * records first (docs/decisions.md, "A batch with Idempotency-Keys is first tried as if its keys were new").
 */
export async function createPetBatch(
  pool: PostgresPool,
  requests: readonly CreatePetRequest[],
  since: number,
): Promise<PostgresCreateOutcome[]> {
  const firstTry = planCreates(requests, new Map())
  try {
    const { pets, records } = insertsOf(requests, firstTry)
    const rows = await pool.query<PetRow>(insertStatement(pets, records, 'new'), { since, writes: true })
    return createOutcomes(firstTry, petsInDealtOrder(rows, pets.length), new Map())
  } catch (error) {
    const keyed = requests.some((request) => request.idempotency)
    if (keyed && refusedWrites(error)) return replaysOnly(pool, requests, since, error)
    if (!keyed || !secondTryMayDo(error)) throw exhaustedOr(error)
  }
  let inserts = false
  return pool
    .transaction(
      async (client) => {
        const plans = planCreates(
          requests,
          await storedIdempotencyRecords(client, idempotencyRecordsOf(requests)),
        )
        const { pets, records } = insertsOf(requests, plans)
        inserts = pets.length > 0
        const inserted =
          pets.length === 0
            ? []
            : petsInDealtOrder(
                (await client.query<PetRow>(insertStatement(pets, records, 'replacing'))).rows,
                pets.length,
              )
        const replayIds = plans.flatMap((plan) => (plan.kind === 'replay' ? [plan.petId] : []))
        return createOutcomes(plans, inserted, await petsById(client, replayIds))
      },
      { since, lock: INSERT_LOCK, writes: true },
    )
    .catch((error: unknown) => {
      // Every create a replay: a commit lost then changed nothing.
      if (error instanceof WriteInDoubtError && !inserts) {
        throw new StoreUnavailableError('the database was lost while replaying', { cause: error })
      }
      // Its keys seen first by the first try (already stored), the second may meet the refusal itself.
      if (refusedWrites(error)) return replaysOnly(pool, requests, since, error)
      throw exhaustedOr(error)
    })
}

/** The sequence past its last value, as the storage port says it: the pets' ids are used up. */
function exhaustedOr(error: unknown): unknown {
  const { code } = error as { code?: string }
  return code === SEQUENCE_LIMIT_EXCEEDED ? new PetIdsExhaustedError({ cause: error }) : error
}

/**
 * A batch the database refused to write (read-only, a failover onto a standby; or its disk full): replays
 * are answered and a reused key refused as ever, every other create fails with `refusal`. Nothing is
 * written, so no lock (docs/decisions.md, "Unavailable vs wrong").
 */
async function replaysOnly(
  pool: PostgresPool,
  requests: readonly CreatePetRequest[],
  since: number,
  refusal: StoreUnavailableError,
): Promise<PostgresCreateOutcome[]> {
  return pool.transaction(
    async (client) => {
      const plans = planCreates(
        requests,
        await storedIdempotencyRecords(client, idempotencyRecordsOf(requests)),
      )
      const replayIds = plans.flatMap((plan) => (plan.kind === 'replay' ? [plan.petId] : []))
      const replayed = await petsById(client, replayIds)
      return outcomesWithoutWrites(plans, (petId) => replayed.get(petId), refusal)
    },
    { since },
  )
}

/** SQLSTATE of `nextval` past the sequence's last value: the pets' ids are used up. */
const SEQUENCE_LIMIT_EXCEEDED = '2200H'

/**
 * Whether the first try failed for what the second can tell apart: a key already stored (the records'
 * primary key), or ids used up by a batch that may hold replays, which need none.
 */
function secondTryMayDo(error: unknown): boolean {
  const { code, constraint } = error as { code?: string; constraint?: string }
  return (code === '23505' && constraint === 'idempotency_keys_pkey') || code === SEQUENCE_LIMIT_EXCEEDED
}

/** An idempotency record to write with the pet at `position` (from 1) of the insert. */
interface RecordOfPet {
  record: IdempotencyRecord
  position: number
}

/** The pets the `insert` plans create, and the record each keyed one writes. */
function insertsOf(requests: readonly CreatePetRequest[], plans: readonly CreatePlan[]) {
  const toInsert = requestsToInsert(requests, plans)
  return {
    pets: toInsert.map((request) => request.pet),
    records: toInsert.flatMap(({ idempotency }, index): RecordOfPet[] =>
      idempotency ? [{ record: idempotency, position: index + 1 }] : [],
    ),
  }
}

/** What every insert starts with: the insert lock, one id drawn per pet, the pets ($1–$3) inserted. */
const DRAW_AND_INSERT = `locked AS MATERIALIZED (SELECT pg_advisory_xact_lock(${INSERT_LOCK})),
           drawn AS MATERIALIZED (
             SELECT array_agg(id ORDER BY id) AS ids
             FROM (SELECT nextval((SELECT pg_get_serial_sequence('pets', 'id') FROM locked)) AS id
                   FROM unnest($1::text[])) AS each_pet
           ),
           inserted AS (
             INSERT INTO pets (id, name, category_id, status) OVERRIDING SYSTEM VALUE
             SELECT drawn.ids[t.n], t.name, t.category_id, t.status
             FROM drawn, unnest($1::text[], $2::bigint[], $3::text[])
               WITH ORDINALITY AS t(name, category_id, status, n)
             RETURNING ${PET_COLUMNS}
           )`

/**
 * The pets with their records ($4–$8), each with the id dealt to its pet. 'new': a key already stored
 * fails the statement; 'replacing' (the records were read first): only expired ones are there.
 */
function withRecords(existing: 'new' | 'replacing'): string {
  const onConflict =
    existing === 'new'
      ? ''
      : `ON CONFLICT (api_key_id, idempotency_key) DO UPDATE SET fingerprint = excluded.fingerprint,
               pet_id = excluded.pet_id, expires_at_ms = excluded.expires_at_ms`
  return `WITH ${DRAW_AND_INSERT},
           recorded AS (
             INSERT INTO idempotency_keys (${IDEMPOTENCY_COLUMNS})
             SELECT r.api_key_id, r.idempotency_key, r.fingerprint, drawn.ids[r.n], r.expires_at_ms
             FROM drawn, unnest($4::bigint[], $5::text[], $6::text[], $7::bigint[], $8::bigint[])
               AS r(api_key_id, idempotency_key, fingerprint, n, expires_at_ms)
             ${onConflict}
           )
           SELECT * FROM inserted`
}

// Written once, names and texts: every batch takes one of these three.
const INSERTS = {
  plain: { name: 'pets.insert', text: `WITH ${DRAW_AND_INSERT} SELECT * FROM inserted` },
  new: { name: 'pets.insert-with-new-records', text: withRecords('new') },
  replacing: { name: 'pets.insert-with-replacing-records', text: withRecords('replacing') },
} as const

/**
 * Inserts `pets` in one statement that takes the insert lock itself, no id drawn before it; one id is drawn
 * per pet and the k-th smallest dealt to the k-th pet (`petsInDealtOrder` undoes it), never assumed from an
 * ORDER BY (docs/decisions.md, "Gap-free order on PostgreSQL"). One plan kept per connection.
 */
function insertStatement(
  pets: readonly NewPet[],
  records: readonly RecordOfPet[],
  existing: 'new' | 'replacing',
): Statement {
  const values = [
    pets.map((p) => p.name),
    pets.map((p) => p.categoryId.toString()),
    pets.map((p) => p.status ?? null),
  ]
  if (records.length === 0) return { ...INSERTS.plain, values }
  return {
    ...INSERTS[existing],
    values: [
      ...values,
      records.map(({ record }) => record.apiKeyId.toString()),
      records.map(({ record }) => record.idempotencyKey),
      records.map(({ record }) => record.fingerprint),
      records.map(({ position }) => String(position)),
      records.map(({ record }) => String(record.expiresAtMs)),
    ],
  }
}

/** The inserted pets in the order of the creates: the k-th smallest id went to the k-th pet. */
function petsInDealtOrder(rows: readonly PetRow[], expected: number): Pet[] {
  if (rows.length !== expected) throw new Error(`inserted ${rows.length} pets for ${expected} creates`)
  return rows.map(petFromRow).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
}
