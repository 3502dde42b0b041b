import type { StorageLog, StoreHealth } from '../store.ts'
import type { SqliteConnection } from './sqlite-connection.ts'
import {
  diagnoseIoError,
  FAULT_REASONS,
  type StorageFault,
  StorageFaultError,
  storageFaultOf,
} from './sqlite-errors.ts'
import { SqliteFileIdentity, type WatchedFile } from './sqlite-file-identity.ts'
import { SqliteLogLength } from './sqlite-log-length.ts'
import { probeWrite } from './sqlite-settings-queries.ts'
import { FREE_BYTES_FLOOR, SqliteVolume } from './sqlite-volume.ts'

// While a fault lasts, readiness probes with a write at most this often (/readyz needs no key); the
// volume's free space and read-only state are looked at as often, found or not.
const PROBE_INTERVAL_MS = 1000

// Faults no write's success ends: files no longer the ones opened, a log cut short (until a restart).
type LastingFault = 'file_replaced' | 'log_cut'
const lasts = (fault: StorageFault | undefined): fault is LastingFault =>
  fault === 'file_replaced' || fault === 'log_cut'

const WHAT_TO_DO: Record<Exclude<StorageFault, LastingFault>, string> = {
  disk_full: 'free space and the service resumes by itself',
  read_only:
    'make it writable again (a file system the kernel turned read-only after disk errors needs a repair and a restart)',
  io_error: 'check the disk; the service resumes by itself once writes succeed',
  cannot_open: 'check the files and their permissions; the service resumes once they open',
  corrupt: 'restore the database from a backup and restart the service; until then the fault lasts',
}
const REFUSED = 'new creates are refused with 503 and /readyz reports not ready'

/**
 * The embedded store's health: the last storage fault, until a write or a probe write succeeds again,
 * whether the database files are still the ones opened, and whether their volume is full or read-only
 * (so an idle instance is not ready before any write has failed). Each change is logged once.
 */
export class SqliteHealth {
  readonly #db: SqliteConnection
  readonly #path: string
  readonly #files: SqliteFileIdentity | undefined
  readonly #logLength: SqliteLogLength | undefined
  readonly #volume: SqliteVolume | undefined
  readonly #log: StorageLog
  #fault: StorageFault | undefined
  // Monotonic milliseconds (performance.now): a wall clock stepped back would put off every probe.
  #probedAt = Number.NEGATIVE_INFINITY
  /** The volume's fault as last looked at: while it lasts, no successful write ends the store's fault. */
  #volumeFault: 'disk_full' | 'read_only' | undefined
  #volumeCheckedAt = Number.NEGATIVE_INFINITY
  /** A damaged file does not mend: once found, the fault outlasts every other until a restart. */
  #damaged = false
  /** The `-shm` was replaced: this process's index of the log may be stale (see `leaveLog`). */
  #indexReplaced = false
  /** The log was cut short: it no longer holds what the index says, until a restart (see `leaveLog`). */
  #logCut = false

  constructor(db: SqliteConnection, path: string, log: StorageLog) {
    this.#db = db
    this.#path = path
    this.#files = path === ':memory:' ? undefined : new SqliteFileIdentity(path)
    this.#logLength = path === ':memory:' ? undefined : new SqliteLogLength(path)
    this.#volume = path === ':memory:' ? undefined : new SqliteVolume(path)
    this.#log = log
  }

  /**
   * Throws StorageFaultError while a path no longer names the file opened, or once the log is found cut
   * short: what is committed then would not be found by a restart. Called before and after every write,
   * so no such write is acknowledged.
   */
  assertFilesInPlace(): void {
    const changed = this.#files?.changed()
    if (changed === undefined) {
      if (this.#logCut || this.#logLength?.cutShort()) {
        if (!this.#logCut) this.#logWasCut()
        throw new StorageFaultError('log_cut')
      }
      if (this.#fault === 'file_replaced') this.#recovered()
      return
    }
    if (this.#fault !== 'file_replaced') this.#filesReplaced(changed)
    throw new StorageFaultError('file_replaced')
  }

  /**
   * Throws StorageFaultError once the file is known to be damaged: a write would go into a file only a
   * restore from a backup can mend, which would lose it (docs/decisions.md, "Storage faults").
   */
  assertUndamaged(): void {
    if (this.#damaged) throw new StorageFaultError('corrupt')
  }

  /**
   * Whether the store must close leaving the log as it is, for the next open to recover from: SQLite's
   * close would checkpoint by a stale index (the `-shm` replaced), dropping from the log what another
   * process committed, or (the log cut short) copy the cut pages, zeros, over the database.
   */
  leaveLog(): boolean {
    return this.#indexReplaced || this.#logCut || this.#logLength?.cutShort() === true
  }

  /** Lets go of the files it reads beside SQLite: only once the connection is closed. */
  close(): void {
    this.#logLength?.close()
  }

  /** Records a failed operation: a storage fault becomes the store's state until a write succeeds. */
  noteFailure(error: unknown): void {
    const reported = storageFaultOf(error)
    if (reported === undefined || lasts(reported) || lasts(this.#fault)) return
    // An I/O error is told apart once; while it lasts the next ones are the same fault.
    if (reported === this.#fault || (reported === 'io_error' && this.#fault === 'read_only')) return
    const fault =
      reported === 'io_error' && this.#path !== ':memory:' ? diagnoseIoError(this.#path) : reported
    if (fault === this.#fault || lasts(fault)) return
    const cause = error instanceof StorageFaultError ? error.cause : error
    const { message, errcode } = cause as { message?: string; errcode?: number }
    const detail = message === undefined ? '' : ` (SQLite: ${message}${errcode ? `, code ${errcode}` : ''})`
    this.#enter(
      fault,
      { err: cause },
      `${this.#path}: ${FAULT_REASONS[fault]}${detail}: ${REFUSED}; ${WHAT_TO_DO[fault]}`,
    )
  }

  noteWriteSucceeded(): void {
    if (this.#fault === undefined || lasts(this.#fault) || this.#volumeFault !== undefined) return
    // A write that found room (in the log's own pages, say) before a probe looked at the volume is no
    // recovery while the volume is still under readiness's floor: said so, it flapped with the next fault.
    if (this.#fault === 'disk_full' && this.#volume?.check(true).fault !== undefined) return
    this.#recovered()
  }

  /**
   * Readiness: the files are checked, the volume at most once a second, and while a fault lasts (the
   * volume no longer full or read-only) a small write tells whether it is over.
   */
  async health(): Promise<StoreHealth> {
    try {
      this.assertFilesInPlace()
    } catch (error) {
      return { writable: false, reason: FAULT_REASONS[(error as StorageFaultError).fault] }
    }
    this.#checkVolume()
    const probeDue = performance.now() - this.#probedAt >= PROBE_INTERVAL_MS
    if (this.#fault !== undefined && !this.#damaged && this.#volumeFault === undefined && probeDue)
      await this.#probe()
    return this.#fault === undefined
      ? { writable: true }
      : { writable: false, reason: FAULT_REASONS[this.#fault] }
  }

  /** Looks at the volume (at most once a second); a full or read-only one is a fault, logged once. */
  #checkVolume(): void {
    const now = performance.now()
    if (this.#volume === undefined || now - this.#volumeCheckedAt < PROBE_INTERVAL_MS) return
    this.#volumeCheckedAt = now
    const { fault, freeBytes } = this.#volume.check(this.#fault === 'disk_full')
    this.#volumeFault = fault
    // A fault already known (a failed write found it first) was logged then; but I/O errors seen before
    // the kernel turned the volume read-only become that, which needs a repair and a restart to pass.
    const worse = fault === 'read_only' && this.#fault === 'io_error'
    if (fault === undefined || (this.#fault !== undefined && !worse)) return
    const found =
      fault === 'disk_full'
        ? `${freeBytes} bytes free, less than the ${FREE_BYTES_FLOOR} readiness asks for`
        : 'its mount is read-only'
    this.#enter(
      fault,
      { freeBytes },
      `${this.#path}: ${FAULT_REASONS[fault]} (${found}): /readyz reports not ready; ${WHAT_TO_DO[fault]}`,
    )
  }

  async #probe(): Promise<void> {
    this.#probedAt = performance.now()
    try {
      await probeWrite(this.#db)
      this.noteWriteSucceeded()
    } catch (error) {
      this.noteFailure(error)
    }
  }

  /**
   * Reports replaced files, once. Every committed write is first copied from the log into the open
   * database file (a checkpoint) — unless another process has meanwhile put a log of its own at the
   * path — so after a deleted -wal the next start still finds every pet acknowledged so far.
   */
  #filesReplaced(changed: WatchedFile): void {
    if (changed === 'shm') {
      this.#indexReplaced = true
      // No checkpoint: this index may be stale beside another process's, and copying by it would damage
      // the database file. The log holds every commit, and a restart rebuilds the index from it.
      this.#enter(
        'file_replaced',
        { file: `${this.#path}-shm`, checkpointed: false },
        `${this.#path}-shm was deleted or replaced while in use (another process opening the database ` +
          `now shares no lock with this one): ${REFUSED}; restart the service, which rebuilds it from the log`,
      )
      return
    }
    // With another database at the path, the log there (still this one's) is emptied once copied: its
    // next open would replay this database's pages onto the other one. With none, it stays, and a start
    // refuses it instead of beginning an empty database beside it.
    const another = changed === 'database' && this.#files?.replacedByAnother('database') === true
    const mode = another ? 'TRUNCATE' : 'FULL'
    const checkpointed =
      !(changed === 'wal' && this.#files?.replacedByAnother('wal')) && this.#checkpoint(mode)
    const file = changed === 'wal' ? `${this.#path}-wal` : this.#path
    const now = this.#files?.openedFileNow(changed)
    let advice: string
    if (changed === 'wal' && checkpointed) {
      advice = `every committed pet was copied into ${this.#path}, so restarting the service loses nothing`
    } else {
      const kept = checkpointed
        ? 'every committed pet is in the open file'
        : 'the latest pets are in the open files'
      advice = now?.deleted
        ? `${kept}: copy ${now.path} to ${file} while this process runs, then restart the service`
        : now
          ? `${kept}, now ${now.path}: move it back to resume`
          : `${kept}: put ${file} back to resume`
      if (another && !checkpointed)
        advice += `; before a restart, move ${this.#path}-wal away: it holds this database's latest pages, which the file now at ${this.#path} would take in`
    }
    this.#enter(
      'file_replaced',
      { file, checkpointed },
      `${file} was deleted, moved or replaced while in use: ${REFUSED}; ${advice} (a restart opens ` +
        `whatever is at ${this.#path})`,
    )
  }

  /** Reports the log cut short, once; no checkpoint, which would copy the cut pages over the database. */
  #logWasCut(): void {
    this.#logCut = true
    const file = `${this.#path}-wal`
    this.#enter(
      'log_cut',
      { file, checkpointed: false },
      `${file} was cut short while in use (emptied or truncated): pets committed since its last checkpoint ` +
        `into ${this.#path} that were in the part cut off are lost, unless a backup holds them; ` +
        `${REFUSED}; restart the service, which opens ${this.#path} whole, with what is left of the log ` +
        '(the stop leaves the cut log as it is, not copied in)',
    )
  }

  /** Copies the whole log into the database file (and with TRUNCATE empties it); false if it could not. */
  #checkpoint(mode: 'FULL' | 'TRUNCATE'): boolean {
    try {
      const row = this.#db.statement(`PRAGMA wal_checkpoint(${mode})`).get() as Record<string, bigint>
      return row.busy === 0n && row.log === row.checkpointed
    } catch {
      return false
    }
  }

  #enter(fault: StorageFault, details: object, message: string): void {
    this.#fault = fault
    if (fault === 'corrupt') this.#damaged = true
    this.#log.error({ storageFault: fault, database: this.#path, ...details }, message)
  }

  #recovered(): void {
    // Another fault that passes leaves the damage as it was, reported when it was found.
    if (this.#damaged) {
      this.#fault = 'corrupt'
      return
    }
    this.#log.info(
      { recoveredFrom: this.#fault, database: this.#path },
      'storage recovered: writes are accepted again',
    )
    this.#fault = undefined
  }
}
