import { refuseConflicts } from '../shared/copy-errors.ts'
import { FINISHED_MARK, UNFINISHED_MARK } from '../shared/copy-mark.ts'
import { IDEMPOTENCY_COLUMNS, type IdempotencyRecordRow } from '../shared/rows.ts'
import type { CopiedKey, CopiedPet, CopyTarget, TargetContents } from '../shared/store-copy.ts'
import * as copy from '../shared/store-copy.ts'
import { PostgresPool } from './postgres-connection.ts'
import { migrate } from './postgres-migrator.ts'
import { highestPetIdGiven } from './postgres-pet-queries.ts'
import type { PostgresStoreOptions } from './postgres-pool-config.ts'
import { raiseIdSequence } from './postgres-sequences.ts'

const PET_ROWS =
  'unnest($1::bigint[], $2::text[], $3::bigint[], $4::text[], $5::timestamptz[]) AS k(id, name, category_id, status, created_at)'
const PET_DIFFERS = `(p.name, p.category_id, p.status, p.created_at)
  IS DISTINCT FROM (k.name, k.category_id, k.status, k.created_at)`

const text = (values: readonly unknown[]) => values.map((value) => (value === null ? null : String(value)))

const petColumns = (pets: readonly CopiedPet[]) => [
  text(pets.map((p) => p.id)),
  pets.map((p) => p.name),
  text(pets.map((p) => p.category_id)),
  pets.map((p) => p.status),
  pets.map((p) => p.created_at),
]

/** Writes a copied store into PostgreSQL for `petstore copy`: one statement per chunk, int64 sent as text. */
export class PostgresLoad implements CopyTarget {
  readonly #pool: PostgresPool

  constructor(options: PostgresStoreOptions) {
    this.#pool = new PostgresPool(options)
  }

  async prepare(): Promise<TargetContents> {
    await migrate(this.#pool)
    return copy.contentsOf(
      (
        await this.#pool.query<copy.TargetContentsRow>({
          name: 'copy.contents',
          text: copy.TARGET_CONTENTS_SQL,
        })
      )[0],
    )
  }

  activeKeys(): Promise<{ name: string; hash: string }[]> {
    return this.#pool.query({ name: 'copy.active-keys', text: copy.ACTIVE_KEYS_SQL })
  }

  writeKeys(keys: readonly CopiedKey[], secret: string): Promise<number> {
    const columns = [
      text(keys.map((k) => k.id)),
      keys.map((k) => k.name),
      keys.map((k) => k.hash),
      keys.map((k) => k.hint),
      keys.map((k) => k.created_at),
      keys.map((k) => k.revoked_at),
      text(keys.map((k) => k.deprecated_calls)),
      keys.map((k) => k.last_deprecated_call_at),
    ]
    const rows = `unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::timestamptz[], $6::timestamptz[],
      $7::bigint[], $8::timestamptz[]) AS k(id, name, hash, hint, created_at, revoked_at, deprecated_calls, last_call)`
    return this.#pool.transaction(async (client) => {
      await client.query(
        // Never undoes a revocation nor lowers a count (sqlite-load.ts says why). Before the inserts: a key
        // revoked since the last run frees its name for the key that replaced it under that name.
        `UPDATE api_keys SET revoked_at = coalesce(api_keys.revoked_at, k.revoked_at),
           deprecated_calls = greatest(api_keys.deprecated_calls, k.deprecated_calls),
           last_deprecated_call_at = greatest(api_keys.last_deprecated_call_at, k.last_call)
         FROM ${rows} WHERE api_keys.id = k.id AND api_keys.hash = k.hash`,
        columns,
      )
      const { rowCount } = await client.query(
        `INSERT INTO api_keys (id, name, hash, hint, created_at, revoked_at, deprecated_calls, last_deprecated_call_at)
         OVERRIDING SYSTEM VALUE SELECT * FROM ${rows} ON CONFLICT DO NOTHING`,
        columns,
      )
      // Checked after inserting: a key left out because its name or hash was taken is missing too.
      const missing = await client.query<{ id: bigint }>(
        `SELECT k.id FROM ${rows} WHERE NOT EXISTS
           (SELECT 1 FROM api_keys a WHERE a.id = k.id AND a.name = k.name AND a.hash = k.hash) ORDER BY k.id`,
        columns,
      )
      refuseConflicts(
        'keys',
        missing.rows.map((row) => row.id),
      )
      await client.query(
        `INSERT INTO service_settings VALUES ('service_secret', $1)
         ON CONFLICT (name) DO UPDATE SET value = excluded.value`,
        [secret],
      )
      return rowCount ?? 0
    })
  }

  async petConflicts(pets: readonly CopiedPet[]): Promise<bigint[]> {
    const rows = await this.#pool.query<{ id: bigint }>({
      name: 'copy.pet-conflicts',
      text: `SELECT k.id FROM ${PET_ROWS} JOIN pets p ON p.id = k.id WHERE ${PET_DIFFERS} ORDER BY k.id`,
      values: petColumns(pets),
    })
    return rows.map((row) => row.id)
  }

  writePets(pets: readonly CopiedPet[]): Promise<number> {
    const columns = petColumns(pets)
    return this.#pool.transaction(async (client) => {
      const { rowCount } = await client.query(
        `INSERT INTO pets (id, name, category_id, status, created_at) OVERRIDING SYSTEM VALUE
         SELECT * FROM ${PET_ROWS} ON CONFLICT (id) DO NOTHING`,
        columns,
      )
      // A new statement sees this transaction's inserts: every pet must now be there as copied.
      const differing = await client.query<{ id: bigint }>(
        `SELECT k.id FROM ${PET_ROWS} LEFT JOIN pets p ON p.id = k.id
         WHERE p.id IS NULL OR ${PET_DIFFERS} ORDER BY k.id`,
        columns,
      )
      refuseConflicts(
        'pets',
        differing.rows.map((row) => row.id),
      )
      return rowCount ?? 0
    })
  }

  async writeIdempotencyRecords(records: readonly IdempotencyRecordRow[]): Promise<number> {
    const rows = await this.#pool.query<{ api_key_id: bigint }>({
      name: 'copy.write-idempotency',
      text: `INSERT INTO idempotency_keys (${IDEMPOTENCY_COLUMNS})
       SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bigint[], $5::bigint[])
       ON CONFLICT DO NOTHING RETURNING api_key_id`,
      values: [
        text(records.map((r) => r.api_key_id)),
        records.map((r) => r.idempotency_key),
        records.map((r) => r.fingerprint),
        text(records.map((r) => r.pet_id)),
        text(records.map((r) => r.expires_at_ms)),
      ],
    })
    return rows.length
  }

  async raiseSequences(petId: bigint, keyId: bigint): Promise<bigint> {
    // Never lowered: ids given out on the target before stay below the next one too.
    await this.#pool.query(raiseIdSequence('pets', petId))
    await this.#pool.query(raiseIdSequence('api_keys', keyId))
    // Read after: with nothing to raise the statement sets nothing, and the sequence may still be ahead.
    return highestPetIdGiven(this.#pool)
  }

  async markUnfinished(since: string): Promise<void> {
    await this.#pool.query({
      name: 'copy.unfinished',
      text: 'INSERT INTO service_settings VALUES ($1, $2) ON CONFLICT (name) DO NOTHING',
      values: [UNFINISHED_MARK, since],
    })
  }

  async markFinished(at: string): Promise<void> {
    // One statement, so one transaction: a service never reads the copy as neither under way nor finished.
    await this.#pool.query({
      name: 'copy.finished',
      text: `WITH cleared AS (DELETE FROM service_settings WHERE name = $1)
        INSERT INTO service_settings VALUES ($2, $3) ON CONFLICT (name) DO UPDATE SET value = excluded.value`,
      values: [UNFINISHED_MARK, FINISHED_MARK, at],
    })
  }

  close(): Promise<void> {
    return this.#pool.close()
  }
}
