import { resolve } from 'node:path'
import { appliedMigrationsOf, pendingMigrations, schemaStatusOf } from '../shared/migration-plan.ts'
import { type MigrateOptions, type MigrationReport, NoSchemaError, type SchemaStatus } from '../store.ts'
import type { SqliteConnection } from './sqlite-connection.ts'
import { NOW, sqliteMigrations } from './sqlite-migrations.ts'

/** The migrations the database records, whatever release made its bookkeeping. */
function appliedMigrations(db: SqliteConnection) {
  return appliedMigrationsOf(db.statement('SELECT * FROM schema_migrations').all())
}

/**
 * Applies the migrations the database lacks, in one transaction: `BEGIN IMMEDIATE` takes the write lock,
 * so processes starting together apply them once. Each is recorded with its compatibility floor; a
 * database whose newer migrations this release cannot run on is refused.
 */
export function migrate(
  db: SqliteConnection,
  { makeSchema = true }: MigrateOptions = {},
): Promise<MigrationReport> {
  return db.run(() => {
    const bare =
      db
        .statement("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' LIMIT 1")
        .get() === undefined
    const where = db.path === ':memory:' ? db.path : resolve(db.path)
    if (bare && !makeSchema) throw new NoSchemaError(where)
    db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL DEFAULT (${NOW}),
      compatible_from INTEGER) STRICT`)
    return db.transaction(() => {
      // Bookkeeping made before floors were recorded gains their column; its rows keep no floor.
      const floors = db
        .statement("SELECT 1 FROM pragma_table_info('schema_migrations') WHERE name = 'compatible_from'")
        .get()
      if (floors === undefined) db.exec('ALTER TABLE schema_migrations ADD COLUMN compatible_from INTEGER')
      const added = floors === undefined ? { floorsColumnAdded: true as const } : {}
      const before = appliedMigrations(db)
      const pending = pendingMigrations(sqliteMigrations, before)
      for (const migration of pending) {
        db.exec(migration.sql)
        db.statement('INSERT INTO schema_migrations (version, name, compatible_from) VALUES (?, ?, ?)').run(
          migration.version,
          migration.name,
          migration.compatibleFrom,
        )
      }
      const applied = pending.map((migration) => migration.version)
      const status = schemaStatusOf(sqliteMigrations, [...before, ...pending])
      return { applied, ...status, ...(bare ? { made: where } : {}), ...added }
    })
  })
}

/** Where the database's schema stands for this release. */
export function schemaStatus(db: SqliteConnection): Promise<SchemaStatus> {
  return db.run(() => schemaStatusOf(sqliteMigrations, appliedMigrations(db)))
}
