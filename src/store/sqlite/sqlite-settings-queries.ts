import { randomBytes } from 'node:crypto'
import { FINISHED_MARK, UNFINISHED_MARK } from '../shared/copy-mark.ts'
import type { CopyMarks } from '../store.ts'
import type { SqliteConnection } from './sqlite-connection.ts'

/** The value of the setting `name`, if the database holds it (inside a `run`); only read. */
function settingIn(db: SqliteConnection, name: string): string | undefined {
  const row = db.statement('SELECT value FROM service_settings WHERE name = ?').get(name)
  return (row as { value: string } | undefined)?.value
}

/** The database's signing secret if a process has made it; only read (a `copy` source). */
export function storedSecret(db: SqliteConnection): Promise<string | undefined> {
  return db.run(() => settingIn(db, 'service_secret'))
}

/** The marks `petstore copy` leaves: when one started, if it has not finished, and when the last finished. */
export function copyMarks(db: SqliteConnection): Promise<CopyMarks> {
  return db.run(() => ({
    unfinishedSince: settingIn(db, UNFINISHED_MARK),
    lastFinishedAt: settingIn(db, FINISHED_MARK),
  }))
}

/**
 * The database's signing secret: created by whichever process asks first, then the same for all. Read
 * first, so a database that has it is never written.
 */
export function serviceSecret(db: SqliteConnection): Promise<string> {
  return db.run(() => {
    const found = settingIn(db, 'service_secret')
    if (found !== undefined) return found
    db.statement(
      "INSERT INTO service_settings VALUES ('service_secret', ?) ON CONFLICT (name) DO NOTHING",
    ).run(randomBytes(32).toString('base64url'))
    return settingIn(db, 'service_secret') as string
  })
}

/** A row written and deleted in one transaction: whether the storage takes writes again (readiness). */
export function probeWrite(db: SqliteConnection): Promise<void> {
  return db.run(() =>
    db.transaction(() => {
      db.statement("INSERT OR REPLACE INTO service_settings VALUES ('write_probe', ?)").run(
        new Date().toISOString(),
      )
      db.statement("DELETE FROM service_settings WHERE name = 'write_probe'").run()
    }),
  )
}
