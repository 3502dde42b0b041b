import { closeSync, existsSync, fchmodSync, openSync, statSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { backup, type DatabaseSync } from 'node:sqlite'
import { kindOfFile } from '../../file-kind.ts'
import type { BackupSummary } from '../shared/backup-role.ts'
import { isServiceBookkeeping } from '../shared/migration-plan.ts'
import { incompatibility, NoSchemaError } from '../store.ts'
import { leaveNothing, open, schemaOf, verified, writing } from './sqlite-copy-checks.ts'
import { databaseFileAt, isDatabaseFile, notOpenToThisUser } from './sqlite-database-files.ts'
import {
  fsyncPath,
  lstatOrNothing,
  removeAbandoned,
  removeWithCompanions,
  renameDurably,
  statOrNothing,
  temporaryBeside,
} from './sqlite-durable-files.ts'
import { bookkeepingColumnsOf, pragmaOf, unfinishedRestoreRefusal, whyNotRead } from './sqlite-open.ts'
import { directorySlip, notADatabaseFile } from './sqlite-path-slips.ts'

// The backup role of the embedded engine: `backup` here, `restore` in sqlite-restore.ts.
export { restoreDatabase } from './sqlite-restore.ts'

/** `restore --replacing` is PostgreSQL's: SQLite's restore carries forward from the file it replaces. */
export function carryForward(): never {
  throw new Error(
    '--replacing is for a PostgreSQL database pg_restore made: a SQLite restore (--from FILE) keeps what the database it replaces must pass on by itself',
  )
}

// One step copies every page: one read transaction, one snapshot, while writers go on in the WAL. Copied
// in steps, every commit made by the server between two steps would restart the copy (SQLite's backup
// API), which under steady writes might never end.
const ALL_PAGES = 2 ** 31 - 1

// Where a command finds no database, it is most often run from another directory than the service's.
const WHERE_THE_SERVICE_RUNS = ' (DATABASE_URL): run the command where the service runs, or set DATABASE_URL'

/**
 * The live database, read once: a volume that keeps it from being read (full, read-only) is named, and so
 * is a file that is no Pet Store database (a killed first restore's place, another application's).
 */
function openSource(path: string): DatabaseSync {
  let db: DatabaseSync | undefined
  try {
    db = open(path)
    db.prepare('SELECT count(*) FROM sqlite_schema').get()
  } catch (error) {
    db?.close()
    const why = whyNotRead(path, error, 'back up the file put on a writable disk')
    throw new Error(`cannot read the database ${path}: ${(error as Error).message}${why}`, { cause: error })
  }
  // Said of the source before it is copied, where the copy's check blamed the backup made of it.
  const unfinished = unfinishedRestoreRefusal(path, pragmaOf(db, 'application_id'))
  const foreign = !isServiceBookkeeping(bookkeepingColumnsOf(db))
  const tooNew = foreign ? undefined : incompatibility(schemaOf(db))
  if (unfinished === undefined && !foreign && tooNew === undefined) return db
  db.close()
  if (tooNew !== undefined) throw new Error(`${tooNew}: back it up with that release`)
  throw new Error(unfinished ?? `${new NoSchemaError(resolve(path)).message}${WHERE_THE_SERVICE_RUNS}`)
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
  // Read through a link; a FIFO's read would wait for a writer for ever.
  const notFile = notADatabaseFile(resolve(path))
  if (notFile !== undefined) throw new Error(notFile)
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
  refuseOthersFileInStickyDirectory(to)
  if (existsSync(to) && !force) throw new Error(`${to} already exists (give --force to replace it)`)
  const slip = directorySlip(to)
  if (slip !== undefined) throw new Error(slip)
  const directory = resolve(dirname(to))
  if (!existsSync(directory)) {
    throw new Error(
      `${directory} does not exist: make it (mkdir -m 700 ${directory}), or name a file in another directory`,
    )
  }
  removeAbandoned(to, 'backup')
  const temporary = temporaryBeside(to, 'backup')
  removeWithCompanions(temporary)
  const source = openSource(path)
  // A command stopped by a signal ends in process.exit, the copy under way with it.
  const removeAtExit = () => leaveNothing(temporary)
  process.once('exit', removeAtExit)
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
    writing(to, 'the backup', () => fsyncPath(temporary), elsewhere)
    // The check and the sync run without a turn of the event loop: a stop signal sent meanwhile (Ctrl-C
    // on a large database) is handled here, before `to` is replaced, not lost after it.
    await signalsDelivered()
    writing(to, 'the backup', () => renameDurably(temporary, to), elsewhere)
    return { pets, bytes: statSync(to).size }
  } finally {
    if (source.isOpen) source.close()
    process.off('exit', removeAtExit)
    leaveNothing(temporary)
  }
}

// The sticky bit (S_ISVTX, which fs.constants lacks): /tmp's, and a shared backups directory's.
const STICKY = 0o1000

/**
 * In a sticky directory only a file's owner, the directory's or root renames over it: another's file is
 * refused before the copy, which ended in EPERM at its rename, put down to the directory.
 */
function refuseOthersFileInStickyDirectory(to: string): void {
  const euid = process.geteuid?.()
  const [file, directory] = [lstatOrNothing(to), statOrNothing(dirname(to))]
  if (euid === undefined || euid === 0 || file === undefined || directory === undefined) return
  if ((directory.mode & STICKY) === 0 || file.uid === euid || directory.uid === euid) return
  throw new Error(
    `${to} belongs to ${file.uid}:${file.gid}, and in ${resolve(dirname(to))} (a sticky directory) only ` +
      `its owner or the directory's may replace it, not this user (uid ${euid}): name another file, or ` +
      'have its owner remove it',
  )
}

/** What is at `path` when it is there and is not a regular file (the link itself, not what it names). */
function kindOfOrNothing(path: string): string | undefined {
  const stats = lstatOrNothing(path)
  return stats && kindOfFile(stats)
}

/** Resolves after a turn of the event loop that polls for I/O, where a pending signal's handler runs. */
function signalsDelivered(): Promise<void> {
  return new Promise((done) => setImmediate(() => setImmediate(done)))
}
