import { dirname, resolve } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { thisUser, unlessRoot } from '../../file-kind.ts'
import { appliedMigrationsOf, isServiceBookkeeping, schemaStatusOf } from '../shared/migration-plan.ts'
import type { SchemaStatus } from '../store.ts'
import { COMMAND_BUSY_TIMEOUT_MS } from './sqlite-connection.ts'
import { removeWithCompanions } from './sqlite-durable-files.ts'
import { volumeFaultOf } from './sqlite-errors.ts'
import { sqliteMigrations } from './sqlite-migrations.ts'
import { bookkeepingColumnsOf } from './sqlite-open.ts'

// What a backup and a restore share: their copy opened and checked, and their writes' failures named.

/** A database file opened as a command opens one (it waits out a server's write for a while). */
export function open(path: string): DatabaseSync {
  const db = new DatabaseSync(path)
  db.exec(`PRAGMA busy_timeout = ${COMMAND_BUSY_TIMEOUT_MS}`)
  return db
}

/** Where a Pet Store database's schema stands for this release. */
export function schemaOf(db: DatabaseSync): SchemaStatus {
  return schemaStatusOf(
    sqliteMigrations,
    appliedMigrationsOf(db.prepare('SELECT * FROM schema_migrations').all()),
  )
}

/**
 * Checks that the file at `path` is whole (`PRAGMA integrity_check`) and is a Pet Store database at a
 * schema this release runs on (an older one is migrated by the next start, a newer one only if its
 * migrations keep this release working); returns its pet count.
 */
export function verified(path: string, name: string): bigint {
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
    const schema = schemaOf(db)
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
 * Runs `step`, which writes `what` beside `path` (at once or by its promise): a failure for a full or
 * read-only volume names the directory and says which (`volumeFaultOf`); given `otherwise` (every write of
 * `step` goes there), so does one for want of permission, with `otherwise` as the way out.
 */
export function writing<T>(path: string, what: string, step: () => T, otherwise?: string): T {
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
  const rather = unlessRoot(`, or ${otherwise}`)
  return new Error(`${resolve(directory)} is not open to ${thisUser()}: give it this user${rather}`, {
    cause: error,
  })
}

/** Removes a temporary copy if it can (a volume that turned read-only keeps it): never the error to tell. */
export function leaveNothing(temporary: string): void {
  try {
    removeWithCompanions(temporary)
  } catch {}
}
