import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import { DatabaseSync, type StatementSync } from 'node:sqlite'
import { setTimeout as sleep } from 'node:timers/promises'
import { StoreUnavailableError } from '../../errors.ts'

export interface SqliteConnectionOptions {
  /** A file path, or `:memory:` for a throwaway database. */
  path: string
  /** How long an operation keeps retrying while another process holds the write lock. */
  busyTimeoutMs: number
}

const SQLITE_BUSY = 5
const SQLITE_LOCKED = 6

function isBusy(error: unknown): boolean {
  const code = (error as { errcode?: number }).errcode
  return code !== undefined && ((code & 0xff) === SQLITE_BUSY || (code & 0xff) === SQLITE_LOCKED)
}

/**
 * One connection to the SQLite file, set up for durability: WAL mode and `synchronous = FULL`, so a
 * committed write survives a crash of the process or of the machine.
 *
 * node:sqlite is synchronous, so SQLite's own busy wait would freeze every request while another process
 * (the CLI, a second worker) holds the write lock. Instead SQLite gives up at once and `run` retries the
 * work after a short asynchronous pause, for up to `busyTimeoutMs`, then fails with StoreUnavailableError.
 */
export class SqliteConnection {
  readonly #db: DatabaseSync
  readonly #busyTimeoutMs: number
  readonly #statements = new Map<string, StatementSync>()
  #closed = false

  constructor(options: SqliteConnectionOptions) {
    if (options.path !== ':memory:') mkdirSync(dirname(options.path), { recursive: true })
    this.#busyTimeoutMs = options.busyTimeoutMs
    this.#db = new DatabaseSync(options.path)
    this.#db.exec('PRAGMA busy_timeout = 0')
    const mode = this.pragma('journal_mode = WAL')
    if (options.path !== ':memory:' && mode !== 'wal')
      throw new Error(`SQLite refused WAL mode (got ${mode})`)
    this.#db.exec('PRAGMA synchronous = FULL')
  }

  /** Reads (or sets and reads back) a pragma of this connection. */
  pragma(pragma: string): unknown {
    const row = this.#db.prepare(`PRAGMA ${pragma}`).get()
    return row === undefined ? undefined : Object.values(row)[0]
  }

  /** A statement prepared on first use (once migrations created its tables), reading integers as bigint. */
  statement(sql: string): StatementSync {
    let statement = this.#statements.get(sql)
    if (statement === undefined) {
      statement = this.#db.prepare(sql)
      statement.setReadBigInts(true)
      this.#statements.set(sql, statement)
    }
    return statement
  }

  /** Runs SQL that returns nothing (schema changes). */
  exec(sql: string): void {
    this.#db.exec(sql)
  }

  get closed(): boolean {
    return this.#closed
  }

  ensureOpen(): void {
    if (this.#closed) throw new StoreUnavailableError('the store is closed')
  }

  /** Runs `work`, retrying it while another connection holds the lock, for up to `busyTimeoutMs`. */
  async run<T>(work: () => T): Promise<T> {
    this.ensureOpen()
    const deadline = Date.now() + this.#busyTimeoutMs
    for (let attempt = 0; ; attempt++) {
      try {
        return work()
      } catch (error) {
        if (!isBusy(error)) throw error
        if (Date.now() >= deadline) throw new StoreUnavailableError('the database is busy', { cause: error })
        // Jittered, growing pauses (up to ~25 ms) so competing processes do not retry in lockstep.
        await sleep(Math.min(2 ** attempt, 25) * (0.5 + Math.random()))
      }
    }
  }

  /** `work` inside `BEGIN IMMEDIATE` … `COMMIT` (the write lock is taken up front, so it cannot deadlock). */
  transaction<T>(work: () => T): T {
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

  close(): void {
    if (this.#closed) return
    this.#closed = true
    this.#db.close()
  }
}
