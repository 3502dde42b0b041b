import { INT64_MIN } from '../../schemas/int64.ts'
import { copySourceRefusal } from '../shared/migration-plan.ts'
import type { IdempotencyRecordRow } from '../shared/rows.ts'
import type { CopiedKey, CopiedPet, CopySource } from '../shared/store-copy.ts'
import { PostgresPool } from './postgres-connection.ts'
import { schemaStatus } from './postgres-migrator.ts'
import { highestPetIdGiven } from './postgres-pet-queries.ts'
import { refuseSourceWithoutTables } from './postgres-place.ts'
import type { PostgresStoreOptions } from './postgres-pool-config.ts'
import { storedSecret } from './postgres-settings-queries.ts'
import { exactUtc } from './postgres-statements.ts'

const KEY_COLUMNS = `id, name, hash, hint, ${exactUtc('created_at')}, ${exactUtc('revoked_at')}, deprecated_calls, ${exactUtc('last_deprecated_call_at')}`

/** Reads a PostgreSQL store for `petstore copy`, in id order. */
export class PostgresDump implements CopySource {
  readonly #pool: PostgresPool

  constructor(options: PostgresStoreOptions) {
    this.#pool = new PostgresPool(options)
  }

  async prepare(): Promise<void> {
    await refuseSourceWithoutTables(this.#pool)
    const refused = copySourceRefusal(await schemaStatus(this.#pool))
    if (refused !== undefined) throw new Error(refused)
  }

  secret(): Promise<string | undefined> {
    return storedSecret(this.#pool)
  }

  keys(): Promise<CopiedKey[]> {
    return this.#pool.query<CopiedKey>({
      name: 'copy.keys',
      text: `SELECT ${KEY_COLUMNS} FROM api_keys ORDER BY id`,
    })
  }

  async petCount(): Promise<number> {
    const [row] = await this.#pool.query<{ n: bigint }>({
      name: 'copy.count',
      text: 'SELECT count(*) AS n FROM pets',
    })
    return Number(row?.n)
  }

  pets(afterId: bigint, limit: number): Promise<CopiedPet[]> {
    return this.#pool.query<CopiedPet>({
      name: 'copy.pets',
      text: `SELECT id, name, category_id, status, ${exactUtc('created_at')} FROM pets WHERE id > $1 ORDER BY id LIMIT $2`,
      values: [afterId, limit],
    })
  }

  idempotencyRecords(
    after: IdempotencyRecordRow | undefined,
    limit: number,
  ): Promise<IdempotencyRecordRow[]> {
    return this.#pool.query<IdempotencyRecordRow>({
      name: 'copy.idempotency',
      text: `SELECT api_key_id, idempotency_key, fingerprint, pet_id, expires_at_ms FROM idempotency_keys
       WHERE (api_key_id, idempotency_key) > ($1, $2) ORDER BY api_key_id, idempotency_key LIMIT $3`,
      values: [after?.api_key_id ?? INT64_MIN, after?.idempotency_key ?? '', limit],
    })
  }

  highestPetId(): Promise<bigint> {
    return highestPetIdGiven(this.#pool)
  }

  close(): Promise<void> {
    return this.#pool.close()
  }
}
