import {
  accessSync,
  closeSync,
  constants,
  existsSync,
  fchownSync,
  lstatSync,
  openSync,
  readlinkSync,
  readSync,
  realpathSync,
  statSync,
} from 'node:fs'
import { dirname, resolve } from 'node:path'
import { DatabaseSync, type StatementSync } from 'node:sqlite'
import { setTimeout as sleep } from 'node:timers/promises'
import { StoreUnavailableError } from '../../errors.ts'
import { statOrNothing } from './sqlite-durable-files.ts'
import { asStorageError, isBusy, StorageFaultError } from './sqlite-errors.ts'
import { SqliteVolume } from './sqlite-volume.ts'

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
 * A database file that is gone while its write-ahead log is still there was deleted or moved under a
 * running server: SQLite would start an empty database and discard that log, which may hold the latest
 * writes. Refuse, and say what to do (`instead`: what removing the log allows).
 */
export function refuseOrphanedLog(path: string, instead = 'start on an empty database'): void {
  const wal = `${path}-wal`
  if (existsSync(path) || (sizeOf(wal) ?? 0) === 0) return
  throw new Error(
    `${path} is missing but its write-ahead log ${wal} is there: the database file was deleted or moved ` +
      `while in use. Put it back (the log holds its latest writes), or remove ${wal} and ${path}-shm to ` +
      instead,
  )
}

/** A file's size; undefined when it is not there or cannot be seen (the open then says why). */
function sizeOf(file: string): number | undefined {
  return statOrNothing(file)?.size
}

function pragmaOf(db: DatabaseSync, pragma: string): unknown {
  const row = db.prepare(`PRAGMA ${pragma}`).get()
  return row === undefined ? undefined : Object.values(row)[0]
}

/**
 * A database file not there yet is made empty, for its owner alone, whatever the umask: it holds every pet
 * and every key's hash, as a backup does. SQLite gives its log and index files the database's mode.
 */
function createPrivately(path: string): void {
  // Settings refuse a `file:` URI (config-schema.ts), which SQLite would read and create itself.
  if (path === ':memory:') return
  try {
    // Through links to where the file will be: O_EXCL does not follow one, even to nothing.
    let target = path
    for (let hops = 0; hops < 8 && lstatSync(target, { throwIfNoEntry: false })?.isSymbolicLink(); hops++) {
      target = resolve(realpathSync(dirname(target)), readlinkSync(target))
    }
    // Made by root (a command run with sudo) at its path itself, it is given its directory's owner, the
    // service's user, as a restore's file is (SQLite, as root, gives -wal and -shm the database's owner).
    // Never through a link: one the service's user planted could aim anywhere and be handed root's file.
    // Its owner is read first; a directory swapped above the data's (one that user owns) is not caught.
    const owner = target === path && process.geteuid?.() === 0 ? statSync(dirname(path)) : undefined
    const fd = openSync(
      target,
      constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY | constants.O_NOFOLLOW,
      0o600,
    )
    try {
      if (owner !== undefined) fchownSync(fd, owner.uid, owner.gid)
    } finally {
      closeSync(fd)
    }
  } catch {
    // There already (kept as it is), or not creatable: SQLite's own open then says what is wrong.
  }
}

/** Opens `path` in WAL mode with every commit synced; a failure says which file, and why if it can. */
function openDurable(path: string): DatabaseSync {
  let db: DatabaseSync | undefined
  try {
    createPrivately(path)
    db = new DatabaseSync(path)
    db.exec('PRAGMA busy_timeout = 0')
    const mode = pragmaOf(db, 'journal_mode = WAL')
    if (path !== ':memory:' && mode !== 'wal') throw new Error(`SQLite refused WAL mode (got ${mode})`)
    db.exec('PRAGMA synchronous = FULL')
    // A first read opens the write-ahead log, so the files this connection uses exist from here on.
    db.prepare('SELECT count(*) FROM sqlite_schema').get()
    return db
  } catch (error) {
    db?.close()
    const why = isBusy(error) ? HELD : whyNotWritable(path, error)
    throw new Error(`cannot open the database ${path}: ${(error as Error).message}${why}`, { cause: error })
  }
}

/** Opens `path` to read it alone: a backup file stays as it is, byte for byte, even on a read-only mount. */
function openReadOnly(path: string): DatabaseSync {
  let db: DatabaseSync | undefined
  try {
    db = new DatabaseSync(path, { readOnly: true })
    db.exec('PRAGMA busy_timeout = 0')
    db.prepare('SELECT count(*) FROM sqlite_schema').get()
    return db
  } catch (error) {
    db?.close()
    const why = isBusy(error) ? HELD : whyNotReadable(path)
    throw new Error(`cannot read the database ${path}: ${(error as Error).message}${why}`, { cause: error })
  }
}

/** Whether the file's header says WAL mode: read and write versions 2 (SQLite's format, offsets 18, 19). */
function inWalMode(path: string): boolean {
  const header = Buffer.alloc(20)
  try {
    const fd = openSync(path, 'r')
    try {
      readSync(fd, header, 0, 20, 0)
    } finally {
      closeSync(fd)
    }
  } catch {
    return false
  }
  return header[18] === 2 && header[19] === 2
}

/** SQLite says only that it cannot open a file in WAL mode whose -shm it cannot make (a read-only mount). */
function whyNotReadable(path: string): string {
  if (!inWalMode(path)) return ''
  const directory = dirname(path)
  try {
    accessSync(directory, constants.W_OK)
    return ''
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code !== 'EROFS' && code !== 'EACCES') return ''
    const where = code === 'EROFS' ? 'is on a read-only file system' : 'is not writable by this user'
    return (
      ` (it is in WAL mode, which needs to write its -shm file beside it, and ${directory} ${where}: ` +
      'copy from a backup, which is not in WAL mode, or from the file put on a writable disk)'
    )
  }
}

// Busy at open, before any write: a connection holds the file exclusively, as restore does to the end.
const HELD = ' (another process holds it exclusively, as a restore does until it ends): start again then'

// SQLite's primary result codes a lack of room shows as: IOERR, FULL, CANTOPEN.
const ROOM_ERRORS = new Set([10, 13, 14])

/** SQLite says only "unable to open database file" when it cannot create its -wal or -shm beside it. */
function whyNotWritable(path: string, error: unknown): string {
  const directory = dirname(path)
  const owner = ownerKeepingOut(path)
  if (owner !== undefined) return owner
  try {
    accessSync(directory, constants.W_OK)
    // SQLite says only "disk I/O error" (or that it cannot open the file) when it cannot make its log or
    // index for want of room; another failure (a file that is no database) is not put down to a low disk.
    const io = ROOM_ERRORS.has(((error as { errcode?: number }).errcode ?? 0) & 0xff)
    return io && new SqliteVolume(path).check(false).fault === 'disk_full'
      ? ` (the disk holding ${directory} is full)`
      : ''
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'ENOENT') return ` (${directory} does not exist)`
    if (code === 'EROFS') return ` (${directory} is on a read-only file system)`
    // Its mode or owner keeps this user out: run as the user that owns it, or give it that user.
    return code === 'EACCES' ? ` (${directory} is not open to this user)` : ` (${directory} is not writable)`
  }
}

/** Why the database file itself keeps this user out (another user's, mode 0600), if it does. */
function ownerKeepingOut(path: string): string | undefined {
  try {
    accessSync(path, constants.R_OK | constants.W_OK)
    return undefined
  } catch (error) {
    // Its directory's fault (not open to this user): said by the directory's check.
    const stats = (error as NodeJS.ErrnoException).code === 'EACCES' && statOrNothing(path)
    if (!stats) return undefined
    const { uid, gid } = stats
    return ` (${path} belongs to ${uid}:${gid}, and this user (uid ${process.geteuid?.()}) cannot write it: chown it to the user that runs the service)`
  }
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
  readonly #onFault: (error: StorageFaultError) => void
  #closed = false

  /** `onFault` hears of every storage fault an operation ran into (see StorageFaultError). */
  constructor(options: SqliteConnectionOptions, onFault: (error: StorageFaultError) => void = () => {}) {
    // The directory is not created here: only the default one is, by openStore (see prepareDirectory).
    if (options.path !== ':memory:') refuseOrphanedLog(options.path)
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

  /**
   * Runs `work`, retrying it while another connection holds the lock, for up to `busyTimeoutMs`. A fault
   * of the storage (full, read-only, I/O error…) rejects with StorageFaultError, answered 503.
   */
  async run<T>(work: () => T): Promise<T> {
    this.ensureOpen()
    // On the monotonic clock: a wall clock stepped back would stretch the wait past its bound.
    const deadline = performance.now() + this.#busyTimeoutMs
    for (let attempt = 0; ; attempt++) {
      try {
        return work()
      } catch (error) {
        if (!isBusy(error)) throw this.#storageError(error)
        if (performance.now() >= deadline)
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
}
