import type { IdempotencyRecordRow } from '../shared/rows.ts'
import type { CopiedKey, CopiedPet, CopyTarget, TargetContents } from '../shared/store-copy.ts'
import * as copy from '../shared/store-copy.ts'
import { PostgresPool, type PostgresStoreOptions } from './postgres-connection.ts'
import { migrate } from './postgres-migrator.ts'

const text = (values: readonly unknown[]) => values.map((value) => (value === null ? null : String(value)))

/** Writes a copied store into PostgreSQL for `petstore copy`: one statement per chunk, int64 sent as text. */
export class PostgresLoad implements CopyTarget {
  readonly #pool: PostgresPool

  constructor(options: PostgresStoreOptions) {
    this.#pool = new PostgresPool(options)
  }

  async prepare(): Promise<TargetContents> {
    await migrate(this.#pool)
    return copy.contentsOf(
      (await this.#pool.query<copy.TargetContentsRow>('copy.contents', copy.TARGET_CONTENTS_SQL))[0],
    )
  }

  async writeSecret(secret: string): Promise<void> {
    await this.#pool.query(
      'copy.write-secret',
      `INSERT INTO service_settings VALUES ('service_secret', $1)
       ON CONFLICT (name) DO UPDATE SET value = excluded.value`,
      [secret],
    )
  }

  writeKeys(keys: readonly CopiedKey[]): Promise<number> {
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
      const { rowCount } = await client.query(
        `INSERT INTO api_keys (id, name, hash, hint, created_at, revoked_at, deprecated_calls, last_deprecated_call_at)
         OVERRIDING SYSTEM VALUE SELECT * FROM ${rows} ON CONFLICT DO NOTHING`,
        columns,
      )
      await client.query(
        `UPDATE api_keys SET revoked_at = k.revoked_at, deprecated_calls = k.deprecated_calls,
           last_deprecated_call_at = k.last_call FROM ${rows} WHERE api_keys.id = k.id AND api_keys.hash = k.hash`,
        columns,
      )
      return rowCount ?? 0
    })
  }

  async writePets(pets: readonly CopiedPet[]): Promise<number> {
    const rows = await this.#pool.query<{ id: bigint }>(
      'copy.write-pets',
      `INSERT INTO pets (id, name, category_id, status, created_at) OVERRIDING SYSTEM VALUE
       SELECT * FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::text[], $5::timestamptz[])
       ON CONFLICT (id) DO NOTHING RETURNING id`,
      [
        text(pets.map((p) => p.id)),
        pets.map((p) => p.name),
        text(pets.map((p) => p.category_id)),
        pets.map((p) => p.status),
        pets.map((p) => p.created_at),
      ],
    )
    return rows.length
  }

  async writeIdempotencyRecords(records: readonly IdempotencyRecordRow[]): Promise<number> {
    const rows = await this.#pool.query<{ api_key_id: bigint }>(
      'copy.write-idempotency',
      `INSERT INTO idempotency_keys
       SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bigint[], $5::bigint[])
       ON CONFLICT DO NOTHING RETURNING api_key_id`,
      [
        text(records.map((r) => r.api_key_id)),
        records.map((r) => r.idempotency_key),
        records.map((r) => r.fingerprint),
        text(records.map((r) => r.pet_id)),
        text(records.map((r) => r.expires_at_ms)),
      ],
    )
    return rows.length
  }

  async raiseSequences(petId: bigint, keyId: bigint): Promise<void> {
    // Never lowered: ids given out on the target before stay below the next one too.
    for (const [table, id] of [
      ['pets', petId],
      ['api_keys', keyId],
    ] as const) {
      await this.#pool.query(
        `copy.raise-${table}`,
        `SELECT setval(pg_get_serial_sequence('${table}', 'id'), GREATEST($1::bigint, (SELECT coalesce(max(id), 0) FROM ${table}),
           (SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM ${table}_id_seq)), true)
         WHERE GREATEST($1::bigint, (SELECT coalesce(max(id), 0) FROM ${table})) > 0`,
        [String(id)],
      )
    }
  }

  close(): Promise<void> {
    return this.#pool.close()
  }
}
