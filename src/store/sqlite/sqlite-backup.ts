import {
  closeSync,
  constants,
  copyFileSync,
  existsSync,
  fchmodSync,
  openSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
} from 'node:fs'
import { dirname, resolve } from 'node:path'
import { backup, DatabaseSync } from 'node:sqlite'
import { kindOfFile } from '../../file-kind.ts'
import type { BackupSummary, RestoreSummary } from '../shared/backup-role.ts'
import { appliedMigrationsOf, isServiceBookkeeping, schemaStatusOf } from '../shared/migration-plan.ts'
import { COMMAND_BUSY_TIMEOUT_MS } from './sqlite-connection.ts'
import {
  assertCanGiveOwner,
  databaseFileAt,
  isDatabaseFile,
  notOpenToThisUser,
  refuseUnsettled,
  replaceKeepingAside,
  settleLeftovers,
  takeOwnership,
} from './sqlite-database-files.ts'
import {
  COMPANION_SUFFIXES,
  fsyncPath,
  lstatOrNothing,
  removeAbandoned,
  removeWithCompanions,
  renameDurably,
  statOrNothing,
  temporaryBeside,
} from './sqlite-durable-files.ts'
import { volumeFaultOf } from './sqlite-errors.ts'
import { sqliteMigrations } from './sqlite-migrations.ts'
import { bookkeepingColumnsOf, refuseOrphanedLog, whyNotRead } from './sqlite-open.ts'
import { carryForward } from './sqlite-restore-carry.ts'
import { endHold, holdForRestore, leaveLogBehind } from './sqlite-restore-hold.ts'

// One step copies every page: one read transaction, one snapshot, while writers go on in the WAL. Copied
// in steps, every commit made by the server between two steps would restart the copy (SQLite's backup
// API), which under steady writes might never end.
const ALL_PAGES = 2 ** 31 - 1

// Where a command finds no database, it is most often run from another directory than the service's.
const WHERE_THE_SERVICE_RUNS = ' (DATABASE_URL): run the command where the service runs, or set DATABASE_URL'

function open(path: string): DatabaseSync {
  const db = new DatabaseSync(path)
  db.exec(`PRAGMA busy_timeout = ${COMMAND_BUSY_TIMEOUT_MS}`)
  return db
}

/** The live database, read once: a volume that keeps it from being read (full, read-only) is named. */
function openSource(path: string): DatabaseSync {
  let db: DatabaseSync | undefined
  try {
    db = open(path)
    db.prepare('SELECT count(*) FROM sqlite_schema').get()
    return db
  } catch (error) {
    db?.close()
    const why = whyNotRead(path, error, 'back up the file put on a writable disk')
    throw new Error(`cannot read the database ${path}: ${(error as Error).message}${why}`, { cause: error })
  }
}

/**
 * Checks that the file at `path` is whole (`PRAGMA integrity_check`) and is a Pet Store database at a
 * schema this release runs on (an older one is migrated by the next start, a newer one only if its
 * migrations keep this release working); returns its pet count.
 */
function verified(path: string, name: string): bigint {
  let db: DatabaseSync | undefined
  try {
    db = open(path)
    const problems = db
      .prepare('PRAGMA integrity_check')
      .all()
      .map((row) => String(Object.values(row)[0]))
    if (problems.join() !== 'ok') {
      // One line: a row of SQLite's report may hold many of its own.
      const cut = (row: string) => (row.length > 200 ? `${row.slice(0, 199)}…` : row)
      const first = problems.slice(0, 3).map((row) => cut(row.replace(/\s+/g, ' ')))
      throw new Error(`fails the integrity check: ${first.join('; ')}`)
    }
    const table = db.prepare(
      "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'schema_migrations'",
    )
    if (table.get() === undefined) throw new Error('is not a Pet Store database (no schema_migrations table)')
    if (!isServiceBookkeeping(bookkeepingColumnsOf(db)))
      throw new Error("is not a Pet Store database (its schema_migrations is another tool's)")
    const schema = schemaStatusOf(
      sqliteMigrations,
      appliedMigrationsOf(db.prepare('SELECT * FROM schema_migrations').all()),
    )
    if (schema.current < 1) throw new Error('is not a Pet Store database (no migration applied)')
    // A newer schema this release runs on (after a rollback) is backed up and restored as its own.
    if (schema.compatibleFrom > schema.latest) {
      throw new Error(
        `has schema version ${schema.current}, which needs a release made for schema ${schema.compatibleFrom} or later (this one knows ${schema.latest})`,
      )
    }
    const count = db.prepare('SELECT count(*) AS n FROM pets')
    count.setReadBigInts(true)
    return count.get()?.n as bigint
  } catch (error) {
    const { code, message } = error as { code?: string; message: string }
    // Ours say what the file is ("is not a Pet Store database"); SQLite's are quoted as its own words.
    if (code !== 'ERR_SQLITE_ERROR') throw new Error(`${name} ${message}`)
    if (/file is not a database/.test(message)) throw new Error(`${name} is not a SQLite database`)
    throw new Error(`${name} cannot be read as a database (SQLite: ${message})`)
  } finally {
    db?.close()
  }
}

/**
 * Copies the live database at `path` to `to`, consistently, while servers go on reading and writing it:
 * into a temporary file beside `to`, checked, made a single file (rollback journal, so it opens anywhere,
 * even read-only), synced, then renamed over `to`. An existing `to` is replaced only with `force`.
 */
export async function backupDatabase(
  path: string,
  to: string,
  { force = false } = {},
): Promise<BackupSummary> {
  const found = databaseFileAt(path)
  if (found === 'unreachable') throw notOpenToThisUser(path)
  if (found === 'absent') throw new Error(`there is no database at ${resolve(path)}${WHERE_THE_SERVICE_RUNS}`)
  // Renamed over the live file, a backup would leave the server writing to a deleted one.
  if (isDatabaseFile(path, to)) {
    throw new Error(`${to} is the database being backed up (or one of its files): name another file`)
  }
  if (statOrNothing(to)?.isDirectory() || to.endsWith('/')) {
    throw new Error(`${to} is a directory: name the backup file`)
  }
  // Renamed over, a device (/dev/null, for root) or a link would be gone: only a backup's kind is replaced.
  const kind = kindOfOrNothing(to)
  if (kind !== undefined) {
    throw new Error(`${to} is ${kind}: --force replaces only a regular file; name another file`)
  }
  if (existsSync(to) && !force) throw new Error(`${to} already exists (give --force to replace it)`)
  if (!existsSync(dirname(to))) throw new Error(`${dirname(to)} does not exist`)
  removeAbandoned(to, 'backup')
  const temporary = temporaryBeside(to, 'backup')
  removeWithCompanions(temporary)
  const source = openSource(path)
  try {
    const elsewhere = 'back up into another directory'
    await writing(
      to,
      'the backup',
      async () => {
        // Made new, for its owner alone whatever the umask: a backup holds every pet and every key's hash.
        const fd = openSync(temporary, 'wx', 0o600)
        try {
          fchmodSync(fd, 0o600)
        } finally {
          closeSync(fd)
        }
        await backup(source, temporary, { rate: ALL_PAGES })
        const copy = open(temporary)
        try {
          copy.exec('PRAGMA journal_mode = DELETE')
        } finally {
          copy.close()
        }
      },
      elsewhere,
    )
    source.close()
    const pets = verified(temporary, 'the backup')
    writing(to, 'the backup', () => renameDurably(temporary, to), elsewhere)
    return { pets, bytes: statSync(to).size }
  } finally {
    if (source.isOpen) source.close()
    leaveNothing(temporary)
  }
}

/** What is at `path` when it is there and is not a regular file (the link itself, not what it names). */
function kindOfOrNothing(path: string): string | undefined {
  const stats = lstatOrNothing(path)
  return stats && kindOfFile(stats)
}

/**
 * Runs `step`, which writes `what` beside `path` (at once, or by the promise it returns); when it fails
 * because that volume is full or read-only, the error names its directory and says which (`volumeFaultOf`,
 * sqlite-errors.ts); with `otherwise`, when every write of `step` goes there, so when the directory is
 * not open to this user, with `otherwise` as the way out.
 */
function writing<T>(path: string, what: string, step: () => T, otherwise?: string): T {
  const said = (error: unknown): never => {
    const notOpen = otherwise === undefined ? undefined : notOpenToUser(error, dirname(path), otherwise)
    throw volumeFaultOf(error, dirname(path), what) ?? notOpen ?? error
  }
  try {
    const result = step()
    return (result instanceof Promise ? result.catch(said) : result) as T
  } catch (error) {
    return said(error)
  }
}

/** A write refused for want of permission, said of the directory rather than of a temporary file in it. */
function notOpenToUser(error: unknown, directory: string, otherwise: string): Error | undefined {
  const code = (error as NodeJS.ErrnoException).code
  if (code !== 'EACCES' && code !== 'EPERM') return undefined
  const user = `this user (uid ${process.geteuid?.() ?? '?'})`
  return new Error(`${resolve(directory)} is not open to ${user}: give it this user, or ${otherwise}`, {
    cause: error,
  })
}

/** Removes a temporary copy if it can (a volume that turned read-only keeps it): never the error to tell. */
function leaveNothing(temporary: string): void {
  try {
    removeWithCompanions(temporary)
  } catch {}
}

/**
 * Puts the backup `from` in place of the database at `path`, once no process has it open and its
 * write-ahead log is folded into it, held from then on past the rename (`holdForRestore`): copied beside
 * it, checked, synced, then renamed over it, the old log and shared-memory files removed just before, so
 * nothing of the old database is ever applied to the restored one. Until the rename, a failure leaves the
 * database as it was (at the rename itself, in a rollback journal's mode, which a start sets back). The
 * database replaced is kept beside it (a second name for its file, made just before the rename), and what
 * must outlive a restore is carried from it into the copy first (`carryForward`).
 */
export function restoreDatabase(from: string, named: string): RestoreSummary {
  if (!existsSync(from)) throw new Error(`there is no file at ${from}`)
  // What a link names is read: a FIFO's read would wait for a writer for ever, the database held meanwhile.
  const kind = kindOfFile(statSync(from))
  if (kind !== undefined) throw new Error(`${from} is ${kind}: name a backup file`)
  if (databaseFileAt(named) === 'unreachable') throw notOpenToThisUser(named)
  if (!existsSync(dirname(named))) {
    // Not made here: run from the wrong directory, a restore would go where no service reads.
    const directory = resolve(dirname(named))
    throw new Error(
      `${directory} does not exist (DATABASE_URL): for a first restore, create it (mkdir -m 700 ${directory}); ` +
        'else run the command where the service runs, or set DATABASE_URL',
    )
  }
  if (existsSync(named) && isDatabaseFile(named, from)) {
    throw new Error(`${from} is the database being restored (or one of its files): name a backup`)
  }
  refuseUnsettled(from)
  // Through a link, the file replaced is its target, whose companions SQLite keeps beside it.
  const path = existsSync(named) ? realpathSync(named) : named
  refuseOrphanedLog(resolve(path), 'restore in its place')
  // First: a killed restore's copy may hold the room the checkpoint below needs.
  removeAbandoned(path, 'restore')
  removeAbandoned(path, 'hold')
  const what = 'the restored database'
  assertCanGiveOwner(path)
  // First, before the copy takes the room the checkpoint may need; held past the rename.
  const hold = writing(path, what, () => holdForRestore(path))
  const held = hold.replacing ? hold.db : undefined
  let renamed = false
  const temporary = temporaryBeside(path, 'restore')
  try {
    writing(path, what, () => settleLeftovers(path))
    removeWithCompanions(temporary)
    // A new file only: one planted under its name makes the copy fail rather than be written through.
    writing(path, what, () => copyFileSync(from, temporary, constants.COPYFILE_EXCL))
    takeOwnership(path, temporary)
    const pets = verified(temporary, from)
    // A failure to write the copy (a full volume) stops the restore; one to read the old database does not.
    const carried = held && writing(path, what, () => carryForward(held, temporary))
    const stamp = new Date().toISOString().replace(/[:.]/g, '-')
    let keptAt: { path: string } | { notKept: string } | undefined
    writing(path, what, () => {
      fsyncPath(temporary)
      if (held) leaveLogBehind(path, hold)
      // The log was emptied: nothing of the old database is applied to the restored one.
      for (const suffix of COMPANION_SUFFIXES) rmSync(`${path}${suffix}`, { force: true })
      keptAt = held && replaceKeepingAside(path, temporary, stamp)
      if (!held) renameSync(temporary, path)
      renamed = true
    })
    endHold(path, hold, renamed)
    try {
      fsyncPath(dirname(path))
    } catch (error) {
      throw new Error(
        `${path} is restored, but its directory could not be synced (${(error as Error).message}): a crash before the next sync could bring the old database back`,
      )
    }
    const replaced = carried && keptAt && { ...carried, keptAt }
    return { pets, bytes: statSync(path).size, ...(replaced ? { replaced } : {}) }
  } finally {
    endHold(path, hold, renamed)
    leaveNothing(temporary)
  }
}
