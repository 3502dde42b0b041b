import { latestVersion, pendingMigrations } from '../shared/migration-plan.ts'
import type { MigrationReport } from '../store.ts'
import type { SqliteConnection } from './sqlite-connection.ts'
import { NOW, sqliteMigrations } from './sqlite-migrations.ts'

const LATEST = latestVersion(sqliteMigrations)

/**
 * Applies the migrations the database lacks, in one transaction: `BEGIN IMMEDIATE` takes the write lock,
 * so processes starting together apply them once. A database newer than this release is refused.
 */
export function migrate(db: SqliteConnection): Promise<MigrationReport> {
  return db.run(() => {
    db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL DEFAULT (${NOW})) STRICT`)
    return db.transaction(() => {
      const rows = db.statement('SELECT version FROM schema_migrations').all() as { version: bigint }[]
      const applied: number[] = []
      for (const migration of pendingMigrations(
        sqliteMigrations,
        rows.map((row) => Number(row.version)),
      )) {
        db.exec(migration.sql)
        db.statement('INSERT INTO schema_migrations (version, name) VALUES (?, ?)').run(
          migration.version,
          migration.name,
        )
        applied.push(migration.version)
      }
      return { applied, current: LATEST }
    })
  })
}

/** The schema version in the database and the one this release expects. */
export function schemaStatus(db: SqliteConnection): Promise<{ current: number; latest: number }> {
  return db.run(() => {
    const row = db.statement('SELECT max(version) AS current FROM schema_migrations').get() as {
      current: bigint
    }
    return { current: Number(row.current ?? 0), latest: LATEST }
  })
}
