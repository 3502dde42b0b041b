import type { DatabaseSync, StatementSync } from 'node:sqlite'
import { setTimeout as sleep } from 'node:timers/promises'
import { StoreUnavailableError } from '../../errors.ts'
import { asStorageError, isBusy, StorageFaultError } from './sqlite-errors.ts'
import { openDurable, openReadOnly, pragmaOf, refuseOrphanedLog } from './sqlite-open.ts'

/**
 * How long a command (backup, restore, copy) waits for a server's write lock on the same file: a server's
 * commits hold it for milliseconds; a command is run by hand, not under a request's bound.
 */
export const COMMAND_BUSY_TIMEOUT_MS = 5000

export interface SqliteConnectionOptions {
  /** A file path, or `:memory:` for a throwaway database. */
  path: string
  /** How long an operation keeps retrying while another process holds the write lock. */
  busyTimeoutMs: number
  /**
   * Only reads (a copy's source): the file's journal mode is kept, and a file in rollback mode (a backup)
   * is left byte for byte; one in WAL mode gets the `-wal` and `-shm` every reader of it makes.
   */
  readOnly?: boolean
}

/**
 * One connection to the SQLite file, in WAL mode with `synchronous = FULL`. A busy lock is retried after
 * asynchronous pauses for up to `busyTimeoutMs`, then StoreUnavailableError: SQLite's own busy wait would
 * freeze every request (docs/decisions.md, "Durability").
 */
export class SqliteConnection {
  readonly #db: DatabaseSync
  readonly #busyTimeoutMs: number
  readonly #statements = new Map<string, StatementSync>()
  readonly #onFault: (error: StorageFaultError) => void
  #closed = false
  /** When every wait for the lock ends, whatever is left of it: set as the store closes (`endWaitsBy`). */
  #waitsEndBy = Number.POSITIVE_INFINITY

  /** The database file's path as given (`:memory:` for none). */
  readonly path: string

  /** `onFault` hears of every storage fault an operation ran into (see StorageFaultError). */
  constructor(options: SqliteConnectionOptions, onFault: (error: StorageFaultError) => void = () => {}) {
    // The directory is not created here: only the default one is, by openStore (see prepareDirectory).
    if (options.path !== ':memory:') refuseOrphanedLog(options.path)
    this.path = options.path
    this.#busyTimeoutMs = options.busyTimeoutMs
    this.#onFault = onFault
    this.#db = options.readOnly === true ? openReadOnly(options.path) : openDurable(options.path)
  }

  /** Reads (or sets and reads back) a pragma of this connection. */
  pragma(pragma: string): unknown {
    return pragmaOf(this.#db, pragma)
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

  /** Runs SQL that returns nothing (schema changes, a connection's settings). */
  exec(sql: string): void {
    this.#db.exec(sql)
  }

  get closed(): boolean {
    return this.#closed
  }

  ensureOpen(): void {
    if (this.#closed) throw new StoreUnavailableError('the store is closed')
  }

  /**
   * Ends every wait for the lock, begun or to come, by `moment` (`performance.now()`): a stop's last writes
   * then fail as busy, said by their callers, within the stop's bound rather than past it.
   */
  endWaitsBy(moment: number): void {
    this.#waitsEndBy = Math.min(this.#waitsEndBy, moment)
  }

  /** Of `waitMs`, what a wait starting now may take before `endWaitsBy`'s moment. */
  waitAllowed(waitMs: number): number {
    return Math.min(waitMs, this.#waitsEndBy - performance.now())
  }

  /**
   * Runs `work`, retrying it while another connection holds the lock, for up to `waitMs` (`busyTimeoutMs`
   * unless the caller already waited part of it: tried once when none is left). A fault of the storage
   * (full, read-only, I/O error…) rejects with StorageFaultError, answered 503.
   */
  async run<T>(work: () => T, waitMs = this.#busyTimeoutMs): Promise<T> {
    this.ensureOpen()
    // On the monotonic clock: a wall clock stepped back would stretch the wait past its bound.
    const deadline = performance.now() + waitMs
    for (let attempt = 0; ; attempt++) {
      try {
        return work()
      } catch (error) {
        if (!isBusy(error)) throw this.#storageError(error)
        // A stop's end of waits (`endWaitsBy`) may come while this one is under way.
        if (performance.now() >= Math.min(deadline, this.#waitsEndBy))
          throw new StoreUnavailableError('the database is busy', { cause: error })
        // Jittered, growing pauses (up to ~25 ms) so competing processes do not retry in lockstep.
        await sleep(Math.min(2 ** attempt, 25) * (0.5 + Math.random()))
      }
    }
  }

  #storageError(error: unknown): unknown {
    const mapped = asStorageError(error)
    if (mapped instanceof StorageFaultError) this.#onFault(mapped)
    return mapped
  }

  /** `work` inside `BEGIN IMMEDIATE` … `COMMIT` (the write lock is taken up front, so it cannot deadlock). */
  transaction<T>(work: () => T): T {
    this.#db.exec('BEGIN IMMEDIATE')
    try {
      const result = work()
      this.#db.exec('COMMIT')
      return result
    } catch (error) {
      // On a full or failing disk the rollback can fail too; the first error is the one that explains.
      try {
        if (this.#db.isTransaction) this.#db.exec('ROLLBACK')
      } catch {}
      throw error
    }
  }

  close(): void {
    if (this.#closed) return
    this.#closed = true
    this.#db.close()
  }

  /**
   * Refuses every later call without closing the file: the process's exit then leaves the log for the
   * next open to recover from, where SQLite's close would checkpoint it (SqliteHealth, `indexReplaced`).
   */
  abandon(): void {
    this.#closed = true
  }
}
