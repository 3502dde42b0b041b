import {
  closeSync,
  constants,
  existsSync,
  fchownSync,
  lstatSync,
  openSync,
  readlinkSync,
  rmSync,
  statSync,
} from 'node:fs'
import { dirname } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { isBusy } from './sqlite-errors.ts'

// How a restore holds the database's path from its first step to the rename (sqlite-backup.ts): no server
// or command opens the file there meanwhile, so none is left on the one the rename replaces, whose
// write-ahead log would then be taken for the restored database's.

/** A connection holding `path` exclusively (`locking_mode = EXCLUSIVE`) until it is closed. */
export interface Hold {
  db: DatabaseSync
  /** The database that was at `path` (false: the restore's own empty file, made there to hold the place). */
  replacing: boolean
}

/**
 * Refuses when any connection has the database open (a server, a worker, a command): every connection
 * to a WAL database holds a shared lock on it as long as it is open, so an exclusive lock is taken only
 * when none is left. Holding it, folds the write-ahead log into the file and empties it, checked: a
 * checkpoint that found no room fails silently at close, and the log removed then would leave the file
 * damaged. Where there is no database, an empty file for the directory's owner alone is made and held.
 */
export function holdForRestore(path: string): Hold {
  if (!existsSync(path)) return { db: holdPlace(path), replacing: false }
  const db = new DatabaseSync(path)
  try {
    lockExclusively(db)
    const folded = db.prepare('PRAGMA wal_checkpoint(TRUNCATE)').get() as Record<string, number>
    if (folded.busy !== 0 || folded.log !== folded.checkpointed) {
      throw new Error(`the write-ahead log of ${path} could not be folded into it: nothing was changed`)
    }
    return { db, replacing: true }
  } catch (error) {
    db.close()
    if (isBusy(error)) {
      throw new Error(`${path} is in use (a server or another command has it open): stop it, then restore`)
    }
    // Damaged beyond opening: nothing of it can be kept or carried, and the operator decides what to keep.
    if (/file is not a database/.test((error as Error).message)) {
      throw new Error(
        `${path} is not a SQLite database (damaged past its header): move it away, then restore`,
      )
    }
    throw error
  }
}

/** Takes the file's lock at once or fails busy, and keeps it after the transaction until the close. */
function lockExclusively(db: DatabaseSync): void {
  db.exec('PRAGMA busy_timeout = 0')
  db.exec('PRAGMA locking_mode = EXCLUSIVE')
  db.exec('BEGIN EXCLUSIVE')
  db.exec('COMMIT')
}

/** The owner and mode a first restore's file gets (sqlite-database-files.ts, `takeOwnership`), held. */
function holdPlace(path: string): DatabaseSync {
  // A link to nothing (a volume not mounted?): which file the service means is for the operator to say.
  if (lstatSync(path, { throwIfNoEntry: false })?.isSymbolicLink()) {
    throw new Error(
      `${path} is a link to nothing (${readlinkSync(path)}): make what it names, or remove it, then restore`,
    )
  }
  const owner = statSync(dirname(path))
  const fd = openSync(
    path,
    constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY | constants.O_NOFOLLOW,
    0o600,
  )
  try {
    if (process.geteuid?.() === 0) fchownSync(fd, owner.uid, owner.gid)
  } finally {
    closeSync(fd)
  }
  const db = new DatabaseSync(path)
  try {
    // No journal file, not even for the empty transaction: its close deletes nothing by name.
    db.exec('PRAGMA journal_mode = MEMORY')
    lockExclusively(db)
    return db
  } catch (error) {
    db.close()
    rmSync(path, { force: true })
    throw error
  }
}

/**
 * Just before the rename: the held database leaves WAL mode for an in-memory journal, which deletes its
 * emptied log now, under the lock, and leaves no file its close would delete by name, so the lock is
 * kept past the rename and its close cannot remove the log of a server that opened the restored file.
 * The file replaced keeps every write; its header then says rollback journal, which a start sets back.
 */
export function leaveLogBehind(path: string, hold: Hold): void {
  const mode = Object.values(hold.db.prepare('PRAGMA journal_mode = MEMORY').get() ?? {})[0]
  if (mode !== 'memory' || (statSync(`${path}-wal`, { throwIfNoEntry: false })?.size ?? 0) > 0) {
    throw new Error(`the write-ahead log of ${path} still holds writes: nothing was changed`)
  }
}

/** Ends the hold; a first restore that did not reach its rename removes the file it made to hold the place. */
export function endHold(path: string, hold: Hold, renamed: boolean): void {
  if (!hold.db.isOpen) return
  try {
    if (!hold.replacing && !renamed) rmSync(path, { force: true })
  } finally {
    hold.db.close()
  }
}
