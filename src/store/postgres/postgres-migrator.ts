import { latestVersion, pendingMigrations } from '../shared/migration-plan.ts'
import type { MigrationReport } from '../store.ts'
import type { PostgresPool } from './postgres-connection.ts'
import { postgresMigrations } from './postgres-migrations.ts'

// Arbitrary, fixed key of the advisory lock that serializes migrations across instances.
const MIGRATION_LOCK = 0x7065_7473_0001n
const LATEST = latestVersion(postgresMigrations)

/**
 * Applies the migrations the database lacks, in one transaction. Instances starting together queue on the
 * advisory lock; the first applies what is missing, the rest find it done. A database newer than this
 * release is refused rather than used.
 */
export function migrate(pool: PostgresPool): Promise<MigrationReport> {
  return pool.transaction(async (client) => {
    await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK])
    await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`)
    const rows = (await client.query<{ version: number }>('SELECT version FROM schema_migrations')).rows
    const applied: number[] = []
    for (const migration of pendingMigrations(
      postgresMigrations,
      rows.map((row) => row.version),
    )) {
      await client.query(migration.sql)
      await client.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [
        migration.version,
        migration.name,
      ])
      applied.push(migration.version)
    }
    return { applied, current: LATEST }
  })
}

/** The schema version in the database and the one this release expects. */
export async function schemaStatus(pool: PostgresPool): Promise<{ current: number; latest: number }> {
  const [row] = await pool.query<{ current: number | null }>({
    name: 'schema.status',
    text: 'SELECT max(version) AS current FROM schema_migrations',
  })
  return { current: row?.current ?? 0, latest: LATEST }
}
