import { existsSync, lstatSync, mkdirSync, statSync } from 'node:fs'
import { resolve } from 'node:path'
import type { Logger } from 'pino'
import type { DatabaseSettings } from '../config.ts'
import { linkToNothing, modeInOctal, ownerRefusal } from '../file-kind.ts'
import { storeLocationOf } from '../setting-forms.ts'
import type { BackupRole } from '../store/shared/backup-role.ts'
import type { CopySource, CopyTarget } from '../store/shared/store-copy.ts'
import * as sqliteBackup from '../store/sqlite/sqlite-backup.ts'
import { databaseFileAt, notOpenToThisUser } from '../store/sqlite/sqlite-database-files.ts'
import { SqliteDump } from '../store/sqlite/sqlite-dump.ts'
import { COMPANION_SUFFIXES } from '../store/sqlite/sqlite-durable-files.ts'
import { identityOf } from '../store/sqlite/sqlite-file-identity.ts'
import { discardIfEmpty, SqliteLoad } from '../store/sqlite/sqlite-load.ts'
import { directorySlip } from '../store/sqlite/sqlite-path-slips.ts'
import { SqliteStore } from '../store/sqlite/sqlite-store.ts'
import { type MigrateOptions, NoSchemaError, type StorageLog, type Store } from '../store/store.ts'
import { CommandError, type Output, UsageError } from './command.ts'

/**
 * The one place an engine is chosen, from `DATABASE_URL`; PostgreSQL's is loaded only when chosen
 * (docs/decisions.md, "Memory"). Storage faults go to `faultLog`, a serving process's: a command that meets
 * one stops and says it in one line.
 */
export async function openStore(
  database: DatabaseSettings,
  log: Pick<Logger, 'warn' | 'error' | 'info'>,
  faultLog?: StorageLog,
): Promise<Store> {
  if (database.engine === 'sqlite') {
    prepareDirectory(database)
    return new SqliteStore({ ...database, ...(faultLog ? { log: faultLog } : {}) })
  }
  const { PostgresStore } = await import('../store/postgres/postgres-store.ts')
  return new PostgresStore({ ...database, onIdleError: idleFailuresLog(log) })
}

/**
 * Why the SQLite database file is too open, if it is: a first start makes it 0600, but a file made by
 * 1.0.0 (or copied in) may be 0644, and it holds every pet and every key's hash. Its -wal and -shm take
 * its mode. Said, not changed: the operator may have meant it (a group of readers).
 */
export function databaseModeWarning(
  database: DatabaseSettings,
): { message: string; details: { files: string[]; mode: string } } | undefined {
  if (database.engine !== 'sqlite' || database.path === ':memory:') return undefined
  const mode = statSync(database.path, { throwIfNoEntry: false })?.mode
  if (mode === undefined || (mode & 0o077) === 0) return undefined
  const { path } = database
  return {
    message: `other users can read the database file (and the -wal and -shm SQLite gives its mode): it holds every pet and every key's hash; chmod 600 ${path} ${path}-wal ${path}-shm`,
    details: { files: [resolve(path)], mode: modeInOctal(mode) },
  }
}

// Failures this close to the first are one event (a restart, a terminate, a network cut drops them all).
const IDLE_FAILURES_GATHERED_MS = 1000

/**
 * Says that idle pooled connections failed: the first at once, with its error (without the stack: every
 * connection reports the same thing), then one line with how many more failed with it, not one each.
 */
function idleFailuresLog(log: Pick<Logger, 'warn'>): (error: Error) => void {
  let more: number | undefined
  return (error) => {
    if (more !== undefined) {
      more++
      return
    }
    more = 0
    log.warn({ error: error.message }, 'an idle database connection failed; it will be replaced')
    setTimeout(() => {
      if (more !== undefined && more > 0) {
        log.warn(
          { connections: more },
          'more idle database connections failed with it; they will be replaced',
        )
      }
      more = undefined
    }, IDLE_FAILURES_GATHERED_MS).unref()
  }
}

/**
 * The configured store with its migrations applied (so a command works on a fresh database), and its
 * cursor secret, as a first start makes it: a copy of a seeded store recognises its own earlier run.
 * `made` says where the schema was made, if it was; with `makeSchema` false, none is made.
 */
async function openMigratedStore(
  database: DatabaseSettings,
  log: Pick<Logger, 'warn' | 'error' | 'info'>,
  makeSchema = true,
): Promise<{ store: Store; made: string | undefined }> {
  const store = await openStore(database, log)
  try {
    const { made } = await store.migrate({ makeSchema, ...sayingWaits(log) })
    await store.serviceSecret()
    return { store, made }
  } catch (error) {
    // Its failure to close is not the migration's: the error that stopped it is the one said.
    await store.close().catch(() => undefined)
    throw error
  }
}

/**
 * The configured store, migrated, for the command `name`. Where no SQLite file is yet, a command that
 * `creates` makes it and says so on `stderr`, naming it; another refuses, naming the path: run from the
 * wrong directory, it would have made an empty database there and exited 0.
 */
export async function openCommandStore(
  database: DatabaseSettings,
  log: Pick<Logger, 'warn' | 'error' | 'info'>,
  { name, creates, stderr }: { name: string; creates: boolean; stderr: Output },
): Promise<Store> {
  refuseMemoryStore(database, name)
  const missing = missingDatabaseFile(database)
  if (missing !== undefined && !creates) {
    throw new CommandError(
      `no database at ${missing} (DATABASE_URL): run the command where the service runs, or set DATABASE_URL`,
    )
  }
  const { store, made } = await openMigratedStore(database, log, creates).catch((error: unknown) => {
    if (!(error instanceof NoSchemaError)) throw error
    throw new CommandError(
      `${error.message} (DATABASE_URL): run the command against the service's database, or set ` +
        'DATABASE_URL ("petstore migrate" makes them)',
    )
  })
  if (missing !== undefined) sayCreated(name, missing, stderr)
  else if (made !== undefined)
    stderr.write(`petstore ${name}: ${made}, held no Pet Store tables; made them\n`)
  return store
}

/** Refuses sqlite::memory: to the command `name`: what it did there would be gone when it exits. */
export function refuseMemoryStore(database: DatabaseSettings, name: string): void {
  if (database.engine !== 'sqlite' || database.path !== ':memory:') return
  const keys = name === 'keys' ? '; give a service on sqlite::memory: its keys in API_KEYS' : ''
  throw new CommandError(
    `DATABASE_URL is sqlite::memory:, a store no other process can open, gone when this command exits: run it on the service's database${keys}`,
  )
}

/** The SQLite file `database` names, as an absolute path, when there is none yet. */
export function missingDatabaseFile(database: DatabaseSettings): string | undefined {
  const file = database.engine === 'sqlite' && database.path !== ':memory:'
  // One this user may not reach is not missing: opening it says whose it is.
  return file && databaseFileAt(database.path) === 'absent' ? resolve(database.path) : undefined
}

/** Migration options that say, at warn, that another process's migrations hold this one up, and how long. */
export function sayingWaits(log: Pick<Logger, 'warn'>): MigrateOptions {
  return {
    onWaiting: (boundMs) =>
      log.warn(
        `another process holds the migration lock (migrating the database): waiting for it, up to ${boundMs / 60_000} min`,
      ),
  }
}

/** Tells on stderr that command `name` made a new database at `path`: run elsewhere, it would go unseen. */
export function sayCreated(name: string, path: string, stderr: Output): void {
  stderr.write(`petstore ${name}: no database was at ${path}; created a new one\n`)
}

/** An empty store in memory, migrated: for a command that builds the app but holds no data (openapi). */
export async function openThrowawayStore(): Promise<Store> {
  const store = new SqliteStore({ path: ':memory:', busyTimeoutMs: 0 })
  await store.migrate()
  return store
}

/**
 * The default `data/` is created on the first start; any other directory must exist, so a mistyped path is
 * refused rather than given a new empty database (and a new initial key) somewhere unexpected.
 */
function prepareDirectory({
  path,
  dataDirectory,
  createsDataDirectory,
}: DatabaseSettings & { engine: 'sqlite' }) {
  if (dataDirectory === undefined || existsSync(dataDirectory)) return
  // There, but this user may not pass it (a link into a closed directory): not "does not exist".
  if (databaseFileAt(path) === 'unreachable') throw notOpenToThisUser(path)
  // A link to a volume not mounted: mkdir would fail with a bare EEXIST, or say it does not exist.
  const dangling = linkToNothing(dataDirectory)
  if (dangling !== undefined) throw new Error(`cannot open the database ${path}: ${dangling}`)
  if (createsDataDirectory) {
    try {
      // Its owner's alone, as the database in it (sqlite-open.ts).
      mkdirSync(dataDirectory, { mode: 0o700 })
    } catch (error) {
      throw new Error(
        `cannot create ${resolve(dataDirectory)} for the database: ${whyNotMade(dataDirectory, error)}`,
      )
    }
    return
  }
  // Exit 1, not a setting refused: a volume mounted late is there at a restart.
  throw new Error(
    `DATABASE_URL names a file in ${resolve(dataDirectory)}, a directory that does not exist (create it first, mount its volume, or correct the path)`,
  )
}

/** Why the default data directory could not be made where the command started, and what to do. */
function whyNotMade(directory: string, error: unknown): string {
  const { code, message } = error as NodeJS.ErrnoException
  const parent = resolve(directory, '..')
  const elsewhere = 'start it in a directory this user may write, or name another place in DATABASE_URL'
  if (code === 'EACCES' || code === 'EPERM') return ownerRefusal(parent, statSync(parent), 'write', elsewhere)
  if (code === 'EROFS') return `${parent} is on a read-only file system: ${elsewhere}`
  if (code === 'ENOSPC') return `the disk holding ${parent} is full: free space on it, or ${elsewhere}`
  return message
}

/**
 * The engine's backup role for the configured database (`<engine>-backup.ts`), and the database it works on.
 * PostgreSQL's refuses, pointing to pg_dump.
 */
export async function backupRole(database: DatabaseSettings): Promise<{ path: string; role: BackupRole }> {
  if (database.engine === 'postgres') {
    return { path: '', role: await import('../store/postgres/postgres-backup.ts') }
  }
  if (database.path === ':memory:')
    throw new CommandError('DATABASE_URL is sqlite::memory:, which has no file to back up or restore')
  return { path: database.path, role: sqliteBackup }
}

/** Where `petstore copy` reads, from `sqlite:PATH` or a postgres:// URL (the engine's dump role). */
export async function openCopySource(url: string): Promise<CopySource> {
  const path = sqlitePathOf(url)
  if (path !== undefined) {
    // Opening a path that is not there would make an empty database and copy nothing.
    if (!existsSync(path)) throw new CommandError(`--from names ${resolve(path)}, which does not exist`)
    return new SqliteDump(path)
  }
  const { PostgresDump } = await import('../store/postgres/postgres-dump.ts')
  const { commandPool } = await import('../store/postgres/postgres-pool-config.ts')
  return new PostgresDump(commandPool(url))
}

/** After a failed copy into `url`, a SQLite file the copy made and left without a row is removed. */
export function discardFailedTarget(url: string): boolean {
  const path = sqlitePathOf(url)
  return path !== undefined && discardIfEmpty(path)
}

/** Where `petstore copy` writes (the engine's load role); a new SQLite file is made if needed. */
export async function openCopyTarget(url: string): Promise<CopyTarget> {
  const path = sqlitePathOf(url)
  if (path !== undefined) return new SqliteLoad(path)
  const { PostgresLoad } = await import('../store/postgres/postgres-load.ts')
  const { commandPool } = await import('../store/postgres/postgres-pool-config.ts')
  return new PostgresLoad(commandPool(url))
}

/**
 * The file a `copy` store names (`sqlite:PATH`), or undefined for PostgreSQL; other forms: wrong usage,
 * said of `option` (`--from`, `--to`), the value never echoed (a URL may hold a password).
 */
export function sqlitePathOf(url: string, option = 'a store'): string | undefined {
  const location = storeLocationOf(url)
  if ('refusal' in location) throw new UsageError(`${option} ${location.refusal}`)
  if (location.engine === 'postgres') return undefined
  if (location.path === ':memory:')
    throw new UsageError(
      `${option} names an in-memory store, gone when the copy ends: sqlite:PATH names a file`,
    )
  return location.path
}

/**
 * Refuses a SQLite target reached through a link or a non-directory on its path: a copy, often run as root,
 * would write wherever the link points (docs/decisions.md, "copy writes no SQLite target through a link").
 */
export function refuseTargetPath(path: string): void {
  const slip = directorySlip(path)
  if (slip !== undefined) throw new CommandError(`--to (the target): ${slip}`)
  for (const file of [path, ...COMPANION_SUFFIXES.map((suffix) => `${path}${suffix}`)]) {
    if (lstatSync(file, { throwIfNoEntry: false })?.isSymbolicLink())
      throw new CommandError(`${file} (--to) is a symbolic link: name a file of its own`)
  }
}

/** Whether two paths name one file (`./a.db`, its absolute path, a symbolic or hard link to it). */
export function sameFile(path: string, other: string | undefined): boolean {
  const identity = identityOf(path)
  return other !== undefined && identity !== undefined && identity === identityOf(other)
}
