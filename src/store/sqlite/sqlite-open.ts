import {
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
import { DatabaseSync } from 'node:sqlite'
import { accessRefused, ownerRefusal } from '../../file-kind.ts'
import { foreignDatabaseRefusal } from '../shared/migration-plan.ts'
import { statOrNothing } from './sqlite-durable-files.ts'
import { isBusy, wasReplaced } from './sqlite-errors.ts'
import { pathSlip, unreachable } from './sqlite-path-slips.ts'
import { SqliteVolume } from './sqlite-volume.ts'

// Opening the database file, durably or to read it alone, and saying why an open failed where SQLite's
// own message does not (sqlite-connection.ts holds the connection so opened).

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

export function pragmaOf(db: DatabaseSync, pragma: string): unknown {
  const row = db.prepare(`PRAGMA ${pragma}`).get()
  return row === undefined ? undefined : Object.values(row)[0]
}

// Written in the header of a first restore's empty file (sqlite-restore-hold.ts): killed before its
// rename, the restore leaves it at the database's path, where a start would take it for a new database.
export const UNFINISHED_RESTORE_ID = 0x50535248

/** What every command says of `path` when its `application_id` marks the place a killed restore held. */
export function unfinishedRestoreRefusal(path: string, applicationId: unknown): string | undefined {
  if (Number(applicationId) !== UNFINISHED_RESTORE_ID) return undefined
  return (
    `${path} is the place a restore held that did not finish: run the restore again (petstore ` +
    'restore --from …); or, to begin an empty database there, remove it'
  )
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

// At open, before anything is served, a lock another process holds for a moment (a read by an operator's
// sqlite3 while WAL is turned on) is waited out; one held longer, as a restore holds the file, refuses.
const OPEN_BUSY_WAIT_MS = 2000

/** The columns of the file's `schema_migrations`, in their order (none without one). */
export function bookkeepingColumnsOf(db: DatabaseSync): string[] {
  const columns = db.prepare("SELECT name FROM pragma_table_info('schema_migrations') ORDER BY cid")
  return columns.all().map((row) => String(row.name))
}

/** Opens `path` in WAL mode with every commit synced; a failure says which file, and why if it can. */
export function openDurable(path: string): DatabaseSync {
  // SQLite opens a file it may read but not write read-only, without a word: its first write then looked
  // like a read-only disk, and its -wal and -shm were made this user's, beside another's database.
  const keptOut = path === ':memory:' ? undefined : ownerKeepingOut(path)
  if (keptOut !== undefined) throw new Error(`cannot open the database ${path}: permission denied${keptOut}`)
  let db: DatabaseSync | undefined
  try {
    createPrivately(path)
    db = new DatabaseSync(path)
    db.exec(`PRAGMA busy_timeout = ${OPEN_BUSY_WAIT_MS}`)
    const unfinished = unfinishedRestoreRefusal(path, pragmaOf(db, 'application_id'))
    if (unfinished !== undefined) throw new Error(unfinished)
    // Before WAL mode, the first change made to a file: another application's is left byte for byte.
    const tables = db.prepare(
      "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
    )
    const foreign = foreignDatabaseRefusal(
      tables.all().map((row) => String(row.name)),
      bookkeepingColumnsOf(db),
    )
    if (foreign !== undefined) throw new Error(foreign)
    const mode = pragmaOf(db, 'journal_mode = WAL')
    if (path !== ':memory:' && mode !== 'wal') throw new Error(`SQLite refused WAL mode (got ${mode})`)
    db.exec('PRAGMA synchronous = FULL')
    // A first read opens the write-ahead log, so the files this connection uses exist from here on.
    db.prepare('SELECT count(*) FROM sqlite_schema').get()
    // From here a busy database is retried asynchronously (SqliteConnection): SQLite's wait would block.
    db.exec('PRAGMA busy_timeout = 0')
    return db
  } catch (error) {
    db?.close()
    const why = isBusy(error) ? HELD : wasReplaced(error) ? REPLACED : whyNotOpened(path, error)
    throw new Error(`cannot open the database ${path}: ${(error as Error).message}${why}`, { cause: error })
  }
}

/**
 * Why a database's first read failed when SQLite says only "disk I/O error" or that it cannot open the
 * file: in WAL mode on a read-only volume, with no room for its -shm beside it, or held by a restore.
 */
export function whyNotRead(path: string, error: unknown, instead: string): string {
  if (isBusy(error)) return HELD
  return whyNotReadable(path, instead) || whyNotWritable(path, error)
}

/** Opens `path` to read it alone: a backup file stays as it is, byte for byte, even on a read-only mount. */
export function openReadOnly(path: string): DatabaseSync {
  let db: DatabaseSync | undefined
  try {
    db = new DatabaseSync(path, { readOnly: true })
    db.exec(`PRAGMA busy_timeout = ${OPEN_BUSY_WAIT_MS}`)
    db.prepare('SELECT count(*) FROM sqlite_schema').get()
    db.exec('PRAGMA busy_timeout = 0')
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

// What a command reading a database on a read-only volume can do instead (`copy`'s source, openReadOnly).
const COPY_INSTEAD = 'copy from a backup, which is not in WAL mode, or from the file put on a writable disk'

/** SQLite says only that it cannot open a file in WAL mode whose -shm it cannot make (a read-only mount). */
function whyNotReadable(path: string, instead = COPY_INSTEAD): string {
  if (!inWalMode(path)) return ''
  const directory = dirname(path)
  const code = accessRefused(directory, constants.W_OK)
  if (code !== 'EROFS' && code !== 'EACCES') return ''
  const where = code === 'EROFS' ? 'is on a read-only file system' : 'is not writable by this user'
  return (
    ` (it is in WAL mode, which needs to write its -shm file beside it, and ${directory} ${where}: ` +
    `${instead})`
  )
}

// Busy at open, before any write: a connection holds the file exclusively, as restore does to the end.
const HELD = ' (another process holds it exclusively, as a restore does until it ends): start again then'
const REPLACED =
  ' (the file was replaced at its path while it was being opened, as a restore does when it puts its ' +
  'backup in place): start again'

// SQLite's primary result codes a lack of room shows as: IOERR, FULL, CANTOPEN.
const ROOM_ERRORS = new Set([10, 13, 14])

/** Why SQLite could not open `path`: a slip in the path (a directory, a link to nothing), else its volume. */
function whyNotOpened(path: string, error: unknown): string {
  if (path === ':memory:') return whyNotWritable(path, error)
  // A slip in the path first, then its directory; last, a link into a directory this user may not pass.
  const slip = pathSlip(path)
  const why = slip === undefined ? whyNotWritable(path, error) : ` (${slip})`
  const beyond = why === '' ? unreachable(path) : undefined
  return beyond === undefined ? why : ` (${beyond})`
}

/** SQLite says only "unable to open database file" when it cannot create its -wal or -shm beside it. */
function whyNotWritable(path: string, error: unknown): string {
  const directory = dirname(path)
  // The file itself keeping this user out was refused before the open (openDurable).
  const code = accessRefused(directory, constants.W_OK)
  if (code === undefined) {
    // SQLite says only "disk I/O error" (or that it cannot open the file) when it cannot make its log or
    // index for want of room; another failure (a file that is no database) is not put down to a low disk.
    const io = ROOM_ERRORS.has(((error as { errcode?: number }).errcode ?? 0) & 0xff)
    return io && new SqliteVolume(path).check(false).fault === 'disk_full'
      ? ` (the disk holding ${directory} is full)`
      : ''
  }
  if (code === 'ENOENT') return ` (${directory} does not exist)`
  if (code === 'EROFS') return ` (${directory} is on a read-only file system)`
  // Its mode or owner keeps this user out: run as the user that owns it, or give it that user.
  return code === 'EACCES' ? ` (${directory} is not open to this user)` : ` (${directory} is not writable)`
}

/** Why the database file itself keeps this user out (another user's, mode 0600), if it does. */
function ownerKeepingOut(path: string): string | undefined {
  // Its directory's fault (not open to this user): said by the directory's check.
  const stats = accessRefused(path, constants.R_OK | constants.W_OK) === 'EACCES' && statOrNothing(path)
  if (!stats) return undefined
  return ` (${ownerRefusal(path, stats, 'write', 'chown it to the user that runs the service')})`
}
