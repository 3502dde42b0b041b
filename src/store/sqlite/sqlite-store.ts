import { randomBytes } from 'node:crypto'
import { INT64_MIN } from '../../schemas/int64.ts'
import type { Pet } from '../../schemas/pet.ts'
import { purgeInChunks } from '../chunked-purge.ts'
import type { CreateOutcome } from '../idempotent-batch.ts'
import { latestVersion, pendingMigrations } from '../migration-plan.ts'
import { type KeyRow, keyRecordFromRow, type PetRow, petFromRow } from '../rows.ts'
import {
  type ApiKeyRecord,
  type CreatedPet,
  type CreatePetRequest,
  type DeprecatedCallCount,
  DuplicateKeyNameError,
  type KeyIdentity,
  type MigrationReport,
  type NewApiKey,
  type PetQuery,
  type Store,
  type StoreHealth,
} from '../store.ts'
import { WriteBatcher } from '../write-batcher.ts'
import { SqliteConnection, type SqliteConnectionOptions } from './sqlite-connection.ts'
import { SqliteHealth, type StorageLog } from './sqlite-health.ts'
import { NOW, sqliteMigrations } from './sqlite-migrations.ts'
import { insertPets, PET_BY_ID_SQL, PET_COLUMNS } from './sqlite-pet-inserts.ts'
import { SqliteWriteThread } from './sqlite-write-thread.ts'

export interface SqliteStoreOptions extends SqliteConnectionOptions {
  /** Most creates committed in one transaction (group commit). */
  maxBatch?: number
  /**
   * Commit creates on a thread of their own (a file only) rather than on the calling thread (the default,
   * and always for `:memory:`, whose data no other connection can see).
   */
  writeThread?: boolean
  /** The write thread's entry module (tests replace it to make the thread fail). */
  writeThreadEntry?: URL
  /** Where storage faults are reported, once each (by default nowhere). */
  log?: StorageLog
}

const SILENT: StorageLog = { error: () => {}, info: () => {} }

const KEY_COLUMNS = 'id, name, hint, created_at, revoked_at, deprecated_calls, last_deprecated_call_at'

/** The keyset page queries (exported so a test can check their plans: index walks, never scans). */
export const LIST_PETS_SQL = {
  all: `SELECT ${PET_COLUMNS} FROM pets WHERE id > ? ORDER BY id LIMIT ?`,
  byStatus: `SELECT ${PET_COLUMNS} FROM pets WHERE status = ? AND id > ? ORDER BY id LIMIT ?`,
}

// One chunk of the purge: the oldest expired keys first, by the expiry index.
const PURGE_CHUNK_SQL = `DELETE FROM idempotency_keys WHERE (api_key_id, idempotency_key) IN
  (SELECT api_key_id, idempotency_key FROM idempotency_keys WHERE expires_at_ms <= ? ORDER BY expires_at_ms LIMIT ?)`

/** A key insert that hit the one-active-key-per-name index becomes the error callers expect. */
function keyNameTaken(error: unknown, name: string): unknown {
  const taken =
    (error as { errstr?: string }).errstr === 'constraint failed' && String(error).includes('api_keys.name')
  return taken ? new DuplicateKeyNameError(name) : error
}

/**
 * The embedded store: one SQLite file (see SqliteConnection for durability and locking). Creates that
 * arrive together are committed together (one `BEGIN IMMEDIATE` … `COMMIT`, one fsync), optionally on a
 * write thread so the sync does not stall reads (SqliteWriteThread), and each 201 is sent only after its
 * commit returned — and after the database files were found still in place (SqliteHealth).
 */
export class SqliteStore implements Store {
  readonly engine = 'sqlite'
  readonly #db: SqliteConnection
  readonly #health: SqliteHealth
  readonly #creates: WriteBatcher<CreatePetRequest, CreateOutcome>
  readonly #writeThread: SqliteWriteThread | undefined

  constructor(options: SqliteStoreOptions) {
    this.#db = new SqliteConnection(options, (fault) => this.#health.noteFailure(fault))
    this.#health = new SqliteHealth(this.#db, options.path, options.log ?? SILENT)
    const onThread = options.path !== ':memory:' && (options.writeThread ?? false)
    const writeThread = onThread ? new SqliteWriteThread(options, options.writeThreadEntry) : undefined
    this.#writeThread = writeThread
    this.#creates = new WriteBatcher(
      writeThread
        ? (batch) => this.#write(() => writeThread.commit(batch))
        : (batch) => this.#write(() => this.#db.run(() => insertPets(this.#db, batch))),
      options.maxBatch ?? 500,
    )
  }

  /**
   * A write, refused while a database file is not the one opened, and checked again once committed: what
   * went into a file no longer at its path would be lost by a restart, so it is never acknowledged.
   */
  async #write<T>(commit: () => Promise<T>): Promise<T> {
    try {
      this.#health.assertFilesInPlace()
      const result = await commit()
      this.#health.assertFilesInPlace()
      this.#health.noteWriteSucceeded()
      return result
    } catch (error) {
      this.#health.noteFailure(error)
      throw error
    }
  }

  async health(): Promise<StoreHealth> {
    this.#db.ensureOpen()
    return this.#health.health()
  }

  migrate(): Promise<MigrationReport> {
    return this.#db.run(() => {
      this.#db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
        version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL DEFAULT (${NOW})) STRICT`)
      return this.#db.transaction(() => {
        const rows = this.#db.statement('SELECT version FROM schema_migrations').all() as {
          version: bigint
        }[]
        const applied: number[] = []
        for (const migration of pendingMigrations(
          sqliteMigrations,
          rows.map((row) => Number(row.version)),
        )) {
          this.#db.exec(migration.sql)
          this.#db
            .statement('INSERT INTO schema_migrations (version, name) VALUES (?, ?)')
            .run(migration.version, migration.name)
          applied.push(migration.version)
        }
        return { applied, current: latestVersion(sqliteMigrations) }
      })
    })
  }

  schemaStatus(): Promise<{ current: number; latest: number }> {
    return this.#db.run(() => {
      const row = this.#db.statement('SELECT max(version) AS current FROM schema_migrations').get() as {
        current: bigint
      }
      return { current: Number(row.current ?? 0), latest: latestVersion(sqliteMigrations) }
    })
  }

  async createPet(request: CreatePetRequest): Promise<CreatedPet> {
    this.#db.ensureOpen()
    const outcome = await this.#creates.submit(request)
    if (outcome instanceof Error) throw outcome
    return outcome
  }

  getPet(id: bigint): Promise<Pet | undefined> {
    return this.#db.run(() => {
      const row = this.#db.statement(PET_BY_ID_SQL).get(id)
      return row === undefined ? undefined : petFromRow(row as unknown as PetRow)
    })
  }

  listPets({ limit, status, afterId = INT64_MIN }: PetQuery): Promise<Pet[]> {
    // Keyset paging: `id > afterId` walks the primary key (or the (status, id) index); no OFFSET scans.
    return this.#db.run(() => {
      const rows =
        status === undefined
          ? this.#db.statement(LIST_PETS_SQL.all).all(afterId, limit)
          : this.#db.statement(LIST_PETS_SQL.byStatus).all(status, afterId, limit)
      return (rows as unknown as PetRow[]).map(petFromRow)
    })
  }

  purgeIdempotencyKeys(nowMs: number, signal?: AbortSignal): Promise<number> {
    const purgeChunk = (rows: number) =>
      this.#db.run(() => Number(this.#db.statement(PURGE_CHUNK_SQL).run(nowMs, rows).changes))
    return purgeInChunks(purgeChunk, signal)
  }

  serviceSecret(): Promise<string> {
    return this.#db.run(() => {
      this.#db
        .statement("INSERT INTO service_settings VALUES ('service_secret', ?) ON CONFLICT (name) DO NOTHING")
        .run(randomBytes(32).toString('base64url'))
      const row = this.#db.statement("SELECT value FROM service_settings WHERE name = 'service_secret'").get()
      return (row as { value: string }).value
    })
  }

  async createApiKey({ name, hash, hint }: NewApiKey): Promise<ApiKeyRecord> {
    const row = await this.#write(() =>
      this.#db.run(() =>
        this.#db
          .statement(`INSERT INTO api_keys (name, hash, hint) VALUES (?, ?, ?) RETURNING ${KEY_COLUMNS}`)
          .get(name, hash, hint),
      ),
    ).catch((error: unknown) => Promise.reject(keyNameTaken(error, name)))
    return keyRecordFromRow(row as unknown as KeyRow)
  }

  async ensureApiKey({ name, hash, hint }: NewApiKey): Promise<void> {
    await this.#write(() =>
      this.#db.run(() =>
        this.#db
          .statement('INSERT INTO api_keys (name, hash, hint) VALUES (?, ?, ?) ON CONFLICT (hash) DO NOTHING')
          .run(name, hash, hint),
      ),
    ).catch((error: unknown) => Promise.reject(keyNameTaken(error, name)))
  }

  findActiveApiKey(hash: string): Promise<KeyIdentity | undefined> {
    return this.#db.run(() => {
      const row = this.#db
        .statement('SELECT id, name FROM api_keys WHERE hash = ? AND revoked_at IS NULL')
        .get(hash)
      return row === undefined ? undefined : { id: row.id as bigint, name: row.name as string }
    })
  }

  listApiKeys(): Promise<ApiKeyRecord[]> {
    return this.#db.run(() => {
      const rows = this.#db.statement(`SELECT ${KEY_COLUMNS} FROM api_keys ORDER BY id`).all()
      return (rows as unknown as KeyRow[]).map(keyRecordFromRow)
    })
  }

  revokeApiKey(name: string): Promise<boolean> {
    return this.#write(() =>
      this.#db.run(() => {
        const result = this.#db
          .statement(`UPDATE api_keys SET revoked_at = ${NOW} WHERE name = ? AND revoked_at IS NULL`)
          .run(name)
        return Number(result.changes) > 0
      }),
    )
  }

  recordDeprecatedCalls(counts: DeprecatedCallCount[]): Promise<void> {
    // Refused while the files are not in place: the counter keeps them and adds them to a later flush.
    return this.#write(() => this.#recordDeprecatedCalls(counts))
  }

  #recordDeprecatedCalls(counts: DeprecatedCallCount[]): Promise<void> {
    return this.#db.run(() => {
      const record = this.#db.statement(`UPDATE api_keys SET deprecated_calls = deprecated_calls + ?,
        last_deprecated_call_at = max(coalesce(last_deprecated_call_at, ''), ?) WHERE id = ?`)
      this.#db.transaction(() => {
        for (const { apiKeyId, calls, lastCallAtMs } of counts) {
          record.run(calls, new Date(lastCallAtMs).toISOString(), apiKeyId)
        }
      })
    })
  }

  async close(): Promise<void> {
    if (this.#db.closed) return
    await this.#creates.flush()
    await this.#writeThread?.close()
    this.#db.close()
  }
}
