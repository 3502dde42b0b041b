import { statSync, utimesSync } from 'node:fs'
import { resolve } from 'node:path'
import { StoreUnavailableError } from '../../errors.ts'
import { DuplicateKeyNameError } from '../store.ts'
import { SqliteVolume } from './sqlite-volume.ts'

const SQLITE_BUSY = 5
const SQLITE_LOCKED = 6

/** Another connection holds the lock: retried after a pause (SqliteConnection.run), never a fault. */
export function isBusy(error: unknown): boolean {
  const code = (error as { errcode?: number }).errcode
  return code !== undefined && ((code & 0xff) === SQLITE_BUSY || (code & 0xff) === SQLITE_LOCKED)
}

// SQLite's write to a file no longer at its path: a rename put another file there (a restore's).
const SQLITE_READONLY_DBMOVED = 1032

/** The file this connection opened was replaced at its path (SQLite then refuses to write to it). */
export function wasReplaced(error: unknown): boolean {
  return (error as { errcode?: number }).errcode === SQLITE_READONLY_DBMOVED
}

/** A key insert that hit the one-active-key-per-name index becomes the error callers expect. */
export function keyNameTaken(error: unknown, name: string): unknown {
  const taken =
    (error as { errstr?: string }).errstr === 'constraint failed' && String(error).includes('api_keys.name')
  return taken ? new DuplicateKeyNameError(name) : error
}

/** Why the database cannot take writes now. Each is answered 503 and makes the service not ready. */
export type StorageFault =
  | 'disk_full'
  | 'read_only'
  | 'io_error'
  | 'cannot_open'
  | 'corrupt'
  | 'file_replaced'
  | 'log_cut'

/** What readiness says about each fault: shown to anyone, so no path and no detail. */
export const FAULT_REASONS: Record<StorageFault, string> = {
  disk_full: 'the disk holding the database is full',
  read_only: 'the database is on a read-only file system',
  io_error: 'the disk holding the database reports I/O errors',
  cannot_open: 'the database files cannot be opened',
  corrupt: 'the database file is damaged',
  file_replaced: 'the database file was deleted, moved or replaced while in use',
  log_cut: "the database's write-ahead log was cut short while in use",
}

// What to do when a command, or a service's start, stops on each: a serving process says its own
// (SqliteHealth), as it resumes by itself once the fault passes.
const REMEDIES: Record<StorageFault, string> = {
  disk_full: 'free space on its volume, then run it again',
  read_only: 'make its volume writable, then run it again',
  io_error: 'check the disk, then run it again',
  cannot_open: 'check the database files and their permissions, then run it again',
  corrupt: 'restore the database from a backup (petstore restore)',
  file_replaced: 'put the database file back at its path, then run it again',
  log_cut: 'restart the service on it (what the cut log held is lost), then run it again',
}

// SQLite's primary result codes (the low byte of every extended code) that are faults of the storage.
const FAULTS_BY_CODE: Record<number, StorageFault> = {
  8: 'read_only', // SQLITE_READONLY and its extended codes
  10: 'io_error', // SQLITE_IOERR_* (a write, sync or truncate the operating system refused)
  11: 'corrupt', // SQLITE_CORRUPT
  13: 'disk_full', // SQLITE_FULL
  14: 'cannot_open', // SQLITE_CANTOPEN
  15: 'io_error', // SQLITE_PROTOCOL: the log's locks kept failing
  22: 'disk_full', // SQLITE_NOLFS: the file cannot grow further
  26: 'corrupt', // SQLITE_NOTADB
}

/** A storage fault, as callers see it: unavailable (503), with what went wrong for readiness and logs. */
export class StorageFaultError extends StoreUnavailableError {
  readonly fault: StorageFault

  constructor(fault: StorageFault, options?: ErrorOptions) {
    super(FAULT_REASONS[fault], { ...options, remedy: REMEDIES[fault] })
    this.name = 'StorageFaultError'
    this.fault = fault
  }
}

/** The fault an error stands for (looking through causes, as a failed write thread wraps its error). */
export function storageFaultOf(error: unknown): StorageFault | undefined {
  for (let cause = error; cause instanceof Error; cause = cause.cause) {
    if (cause instanceof StorageFaultError) return cause.fault
    const code = (cause as { errcode?: number }).errcode
    if (code !== undefined) return FAULTS_BY_CODE[code & 0xff]
  }
  return undefined
}

/** `error` as a StorageFaultError when it is a fault of the storage, else unchanged. */
export function asStorageError(error: unknown): unknown {
  const fault = storageFaultOf(error)
  return fault === undefined || error instanceof StorageFaultError
    ? error
    : new StorageFaultError(fault, { cause: error })
}

/**
 * SQLite reports a write the file system refused as a plain I/O error. Setting the file's times to what
 * they are tells one cause apart: a file system that turned read-only (the kernel does so on disk
 * errors with `errors=remount-ro`) refuses it with EROFS.
 */
export function diagnoseIoError(path: string): StorageFault {
  try {
    const { atime, mtime } = statSync(path)
    utimesSync(path, atime, mtime)
    return 'io_error'
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EROFS' ? 'read_only' : 'io_error'
  }
}

/**
 * A failed write of `what` into `directory` said as the volume's fault when the error is one: full
 * (SQLITE_FULL, ENOSPC, EDQUOT) or read-only (SQLITE_READONLY, EROFS), by the error's own code; an I/O
 * error only when the volume itself is then found full or read-only. Otherwise undefined.
 */
export function volumeFaultOf(error: unknown, directory: string, what: string): Error | undefined {
  const code = (error as NodeJS.ErrnoException).code
  let fault = storageFaultOf(error)
  if (code === 'ENOSPC' || code === 'EDQUOT') fault = 'disk_full'
  if (code === 'EROFS') fault = 'read_only'
  if (fault === 'io_error' || code === 'EIO') fault = volumeStateOf(directory)
  const where = resolve(directory)
  if (fault === 'disk_full') return new Error(`${where} has no space left for ${what}`, { cause: error })
  if (fault === 'read_only') return new Error(`${where} is on a read-only file system`, { cause: error })
  return undefined
}

function volumeStateOf(directory: string): StorageFault | undefined {
  try {
    return new SqliteVolume(resolve(directory, 'file')).check(false).fault
  } catch {
    return undefined
  }
}
