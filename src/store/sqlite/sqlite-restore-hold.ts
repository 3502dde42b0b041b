import {
  closeSync,
  constants,
  existsSync,
  fchmodSync,
  fchownSync,
  linkSync,
  openSync,
  rmSync,
  statSync,
} from 'node:fs'
import { dirname } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { linkToNothing } from '../../file-kind.ts'
import { statOrNothing, temporaryBeside } from './sqlite-durable-files.ts'
import { isBusy } from './sqlite-errors.ts'
import { pragmaOf, UNFINISHED_RESTORE_ID } from './sqlite-open.ts'

// How a restore holds the database's path from its first step to the rename (sqlite-restore.ts): no server
// or command opens the file there meanwhile, so none is left on the one the rename replaces, whose
// write-ahead log would then be taken for the restored database's.

/** A connection holding `path` exclusively (`locking_mode = EXCLUSIVE`) until it is closed. */
export interface Hold {
  db: DatabaseSync
  /** The database that was at `path` (false: the restore's own empty file, made there to hold the place). */
  replacing: boolean
  /** The restore's own file's identity, removed only if it is still the one at `path`. */
  place?: { dev: number; ino: number }
}

/**
 * Refuses while any connection has the database open (each holds a shared lock, so no exclusive one until
 * none is left); holding it, folds the log into the file and checks it did (docs/decisions.md, "The old WAL
 * goes before the rename"). Where there is no database, holds a new empty file, its directory owner's alone.
 */
export function holdForRestore(path: string): Hold {
  if (!existsSync(path)) return holdPlace(path)
  const db = new DatabaseSync(path)
  try {
    lockExclusively(db)
    const folded = db.prepare('PRAGMA wal_checkpoint(TRUNCATE)').get() as Record<string, number>
    if (folded.busy !== 0 || folded.log !== folded.checkpointed) {
      throw new Error(`the write-ahead log of ${path} could not be folded into it: nothing was changed`)
    }
    // No table at all (the place a killed first restore held, an empty file): nothing to keep or carry.
    if (db.prepare('SELECT 1 FROM sqlite_schema LIMIT 1').get() === undefined) {
      leaveLogBehind(path, { db, replacing: false })
      return { db, replacing: false }
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

/**
 * A first restore's place held: an empty database, the owner and mode the restored file gets
 * (sqlite-database-files.ts, `takeOwnership`), locked under a hidden name, then linked at `path`, which
 * fails if anything was made there meanwhile: a server never opens it before it is locked.
 */
function holdPlace(path: string): Hold {
  // A link to nothing (a volume not mounted?): which file the service means is for the operator to say.
  const dangling = linkToNothing(path)
  if (dangling !== undefined) throw new Error(`${dangling}, then restore`)
  const owner = statSync(dirname(path))
  const hidden = temporaryBeside(path, 'hold')
  let db: DatabaseSync | undefined
  try {
    rmSync(hidden, { force: true })
    const fd = openSync(
      hidden,
      constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY | constants.O_NOFOLLOW,
    )
    try {
      fchmodSync(fd, 0o600)
      if (process.geteuid !== undefined) fchownSync(fd, owner.uid, owner.gid)
    } finally {
      closeSync(fd)
    }
    db = new DatabaseSync(hidden)
    // No journal file, not even for the empty transaction: its close deletes nothing by name.
    db.exec('PRAGMA journal_mode = MEMORY')
    db.exec(`PRAGMA application_id = ${UNFINISHED_RESTORE_ID}`)
    lockExclusively(db)
    linkSync(hidden, path)
    const { dev, ino } = statSync(path)
    return { db, replacing: false, place: { dev, ino } }
  } catch (error) {
    db?.close()
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') {
      throw new Error(`${path} was made while the restore began (a server starting?): stop it, then restore`)
    }
    throw error
  } finally {
    rmSync(hidden, { force: true })
  }
}

/**
 * Just before the rename: the held database leaves WAL for an in-memory journal, which deletes its emptied
 * log now, under the lock, so its close cannot delete the log of a server on the restored file
 * (docs/decisions.md, "The old WAL goes before the rename"). The file replaced keeps every write.
 */
export function leaveLogBehind(path: string, hold: Hold): void {
  const mode = pragmaOf(hold.db, 'journal_mode = MEMORY')
  if (mode !== 'memory' || (statSync(`${path}-wal`, { throwIfNoEntry: false })?.size ?? 0) > 0) {
    throw new Error(`the write-ahead log of ${path} still holds writes: nothing was changed`)
  }
}

/** Ends the hold; a first restore short of its rename removes the file it made, if it is still there. */
export function endHold(path: string, hold: Hold, renamed: boolean): void {
  if (!hold.db.isOpen) return
  try {
    const there = statOrNothing(path)
    if (hold.place && !renamed && there?.dev === hold.place.dev && there.ino === hold.place.ino) rmSync(path)
  } finally {
    hold.db.close()
  }
}
