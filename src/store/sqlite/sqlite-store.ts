import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import { DatabaseSync, type StatementSync } from 'node:sqlite'
import { StoreUnavailableError } from '../../errors.ts'
import type { NewPet, Pet } from '../../schemas/pet.ts'
import { type KeyRow, keyRecordFromRow, type PetRow, petFromRow } from '../rows.ts'
import {
  type ApiKeyRecord,
  DuplicateKeyNameError,
  type KeyIdentity,
  type MigrationReport,
  type NewApiKey,
  type PetQuery,
  type Store,
} from '../store.ts'
import { WriteBatcher } from '../write-batcher.ts'
import { sqliteMigrations } from './sqlite-migrations.ts'

export interface SqliteStoreOptions {
  /** A file path, or `:memory:` for a throwaway database. */
  path: string
  busyTimeoutMs: number
}

const SQLITE_BUSY = 5
const SQLITE_LOCKED = 6

/** Busy and locked databases are a passing condition (503); anything else is a real failure. */
function translate(error: unknown): unknown {
  const code = (error as { errcode?: number }).errcode
  if (code !== undefined && ((code & 0xff) === SQLITE_BUSY || (code & 0xff) === SQLITE_LOCKED)) {
    return new StoreUnavailableError('the database is busy', { cause: error })
  }
  return error
}

function isUniqueViolationOn(error: unknown, column: string): boolean {
  return (error as { errstr?: string }).errstr === 'constraint failed' && String(error).includes(column)
}

/**
 * The embedded store: one SQLite file in WAL mode with `synchronous = FULL`, so a committed write survives
 * a crash of the process or the machine. Creates that arrive together are committed together (one
 * `BEGIN IMMEDIATE` … `COMMIT`, one fsync), and each 201 is sent only after its commit returned.
 */
export class SqliteStore implements Store {
  readonly engine = 'sqlite'
  readonly #db: DatabaseSync
  readonly #statements = new Map<string, StatementSync>()
  readonly #creates = new WriteBatcher<NewPet, Pet>((pets) => this.#insertPets(pets), 1000)
  #closed = false

  constructor(options: SqliteStoreOptions) {
    if (options.path !== ':memory:') mkdirSync(dirname(options.path), { recursive: true })
    this.#db = new DatabaseSync(options.path)
    this.#db.exec(`PRAGMA busy_timeout = ${Math.trunc(options.busyTimeoutMs)}`)
    this.#db.exec('PRAGMA journal_mode = WAL')
    this.#db.exec('PRAGMA synchronous = FULL')
    this.#db.exec('PRAGMA foreign_keys = ON')
  }

  /** Statements are prepared on first use, once migrations have created their tables. */
  #statement(sql: string): StatementSync {
    let statement = this.#statements.get(sql)
    if (statement === undefined) {
      statement = this.#db.prepare(sql)
      statement.setReadBigInts(true)
      this.#statements.set(sql, statement)
    }
    return statement
  }

  #run<T>(work: () => T): Promise<T> {
    if (this.#closed) return Promise.reject(new StoreUnavailableError('the store is closed'))
    try {
      return Promise.resolve(work())
    } catch (error) {
      return Promise.reject(translate(error))
    }
  }

  #transaction<T>(work: () => T): T {
    this.#db.exec('BEGIN IMMEDIATE')
    try {
      const result = work()
      this.#db.exec('COMMIT')
      return result
    } catch (error) {
      if (this.#db.isTransaction) this.#db.exec('ROLLBACK')
      throw error
    }
  }

  migrate(): Promise<MigrationReport> {
    return this.#run(() => {
      this.#db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
        version INTEGER PRIMARY KEY, name TEXT NOT NULL,
        applied_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))) STRICT`)
      return this.#transaction(() => {
        const rows = this.#db.prepare('SELECT version FROM schema_migrations').all() as { version: number }[]
        const done = new Set(rows.map((row) => row.version))
        const latest = sqliteMigrations.at(-1)?.version ?? 0
        const newest = Math.max(0, ...done)
        if (newest > latest) {
          throw new Error(`database schema version ${newest} is newer than this release knows (${latest})`)
        }
        const applied: number[] = []
        for (const migration of sqliteMigrations) {
          if (done.has(migration.version)) continue
          this.#db.exec(migration.sql)
          this.#db
            .prepare('INSERT INTO schema_migrations (version, name) VALUES (?, ?)')
            .run(migration.version, migration.name)
          applied.push(migration.version)
        }
        return { applied, current: latest }
      })
    })
  }

  createPet(pet: NewPet): Promise<Pet> {
    if (this.#closed) return Promise.reject(new StoreUnavailableError('the store is closed'))
    return this.#creates.submit(pet)
  }

  #insertPets(pets: NewPet[]): Pet[] {
    const insert = this.#statement(
      'INSERT INTO pets (name, category_id, status) VALUES (?, ?, ?) RETURNING id, name, category_id, status',
    )
    try {
      return this.#transaction(() =>
        pets.map((pet) =>
          petFromRow(insert.get(pet.name, pet.categoryId, pet.status ?? null) as unknown as PetRow),
        ),
      )
    } catch (error) {
      throw translate(error)
    }
  }

  getPet(id: bigint): Promise<Pet | undefined> {
    return this.#run(() => {
      const row = this.#statement('SELECT id, name, category_id, status FROM pets WHERE id = ?').get(id)
      return row === undefined ? undefined : petFromRow(row as unknown as PetRow)
    })
  }

  listPets({ limit, status }: PetQuery): Promise<Pet[]> {
    return this.#run(() => {
      const rows =
        status === undefined
          ? this.#statement('SELECT id, name, category_id, status FROM pets ORDER BY id LIMIT ?').all(limit)
          : this.#statement(
              'SELECT id, name, category_id, status FROM pets WHERE status = ? ORDER BY id LIMIT ?',
            ).all(status, limit)
      return (rows as unknown as PetRow[]).map(petFromRow)
    })
  }

  createApiKey({ name, hash, hint }: NewApiKey): Promise<ApiKeyRecord> {
    return this.#run(() => {
      try {
        const row = this.#statement(
          'INSERT INTO api_keys (name, hash, hint) VALUES (?, ?, ?) RETURNING id, name, hint, created_at, revoked_at',
        ).get(name, hash, hint)
        return keyRecordFromRow(row as unknown as KeyRow)
      } catch (error) {
        if (isUniqueViolationOn(error, 'api_keys.name')) throw new DuplicateKeyNameError(name)
        throw error
      }
    })
  }

  ensureApiKey({ name, hash, hint }: NewApiKey): Promise<void> {
    return this.#run(() => {
      try {
        this.#statement(
          'INSERT INTO api_keys (name, hash, hint) VALUES (?, ?, ?) ON CONFLICT (hash) DO NOTHING',
        ).run(name, hash, hint)
      } catch (error) {
        if (isUniqueViolationOn(error, 'api_keys.name')) throw new DuplicateKeyNameError(name)
        throw error
      }
    })
  }

  findActiveApiKey(hash: string): Promise<KeyIdentity | undefined> {
    return this.#run(() => {
      const row = this.#statement('SELECT id, name FROM api_keys WHERE hash = ? AND revoked_at IS NULL').get(
        hash,
      )
      return row === undefined ? undefined : { id: row.id as bigint, name: row.name as string }
    })
  }

  listApiKeys(): Promise<ApiKeyRecord[]> {
    return this.#run(() => {
      const rows = this.#statement(
        'SELECT id, name, hint, created_at, revoked_at FROM api_keys ORDER BY id',
      ).all()
      return (rows as unknown as KeyRow[]).map(keyRecordFromRow)
    })
  }

  revokeApiKey(name: string): Promise<boolean> {
    return this.#run(() => {
      const result = this.#statement(
        `UPDATE api_keys SET revoked_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
         WHERE name = ? AND revoked_at IS NULL`,
      ).run(name)
      return Number(result.changes) > 0
    })
  }

  async close(): Promise<void> {
    if (this.#closed) return
    await this.#creates.flush()
    this.#closed = true
    this.#db.close()
  }
}
