import { resolve } from 'node:path'
import { INT64_MIN } from '../../schemas/int64.ts'
import { copySourceRefusal } from '../shared/migration-plan.ts'
import type { IdempotencyRecordRow } from '../shared/rows.ts'
import type { CopiedKey, CopiedPet, CopySource } from '../shared/store-copy.ts'
import { NoSchemaError } from '../store.ts'
import { COMMAND_BUSY_TIMEOUT_MS, SqliteConnection } from './sqlite-connection.ts'
import { schemaStatus } from './sqlite-migrator.ts'
import { unfinishedRestoreRefusal } from './sqlite-open.ts'
import { highestPetIdGiven } from './sqlite-pet-queries.ts'
import { storedSecret } from './sqlite-settings-queries.ts'

const KEY_COLUMNS = 'id, name, hash, hint, created_at, revoked_at, deprecated_calls, last_deprecated_call_at'

/**
 * Reads a SQLite store for `petstore copy`, in id order, over a read-only connection: a backup file keeps
 * its bytes (and may sit on a read-only mount); servers may keep using a live file meanwhile.
 */
export class SqliteDump implements CopySource {
  readonly #db: SqliteConnection

  constructor(path: string) {
    this.#db = new SqliteConnection({ path, busyTimeoutMs: COMMAND_BUSY_TIMEOUT_MS, readOnly: true })
  }

  async prepare(): Promise<void> {
    const db = this.#db
    const id = await db.run(() => db.statement('PRAGMA application_id').get()?.application_id)
    const unfinished = unfinishedRestoreRefusal(resolve(db.path), id)
    if (unfinished !== undefined) throw new Error(unfinished)
    const kept = await db.run(() =>
      db.statement("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'schema_migrations'").get(),
    )
    if (kept === undefined) throw new NoSchemaError(resolve(db.path))
    const refused = copySourceRefusal(await schemaStatus(db))
    if (refused !== undefined) throw new Error(refused)
  }

  secret(): Promise<string | undefined> {
    return storedSecret(this.#db)
  }

  keys(): Promise<CopiedKey[]> {
    return this.#db.run(
      () =>
        this.#db.statement(`SELECT ${KEY_COLUMNS} FROM api_keys ORDER BY id`).all() as unknown as CopiedKey[],
    )
  }

  petCount(): Promise<number> {
    return this.#db.run(() => Number(this.#db.statement('SELECT count(*) AS n FROM pets').get()?.n))
  }

  pets(afterId: bigint, limit: number): Promise<CopiedPet[]> {
    return this.#db.run(
      () =>
        this.#db
          .statement(
            'SELECT id, name, category_id, status, created_at FROM pets WHERE id > ? ORDER BY id LIMIT ?',
          )
          .all(afterId, limit) as unknown as CopiedPet[],
    )
  }

  idempotencyRecords(
    after: IdempotencyRecordRow | undefined,
    limit: number,
  ): Promise<IdempotencyRecordRow[]> {
    return this.#db.run(
      () =>
        this.#db
          .statement(`SELECT api_key_id, idempotency_key, fingerprint, pet_id, expires_at_ms FROM idempotency_keys
            WHERE (api_key_id, idempotency_key) > (?, ?) ORDER BY api_key_id, idempotency_key LIMIT ?`)
          .all(
            after?.api_key_id ?? INT64_MIN,
            after?.idempotency_key ?? '',
            limit,
          ) as unknown as IdempotencyRecordRow[],
    )
  }

  highestPetId(): Promise<bigint> {
    return this.#db.run(() => highestPetIdGiven(this.#db))
  }

  async close(): Promise<void> {
    this.#db.close()
  }
}
