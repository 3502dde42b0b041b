import {
  appliedMigrationsOf,
  foreignDatabaseRefusal,
  pendingMigrations,
  schemaStatusOf,
} from '../shared/migration-plan.ts'
import { type MigrateOptions, type MigrationReport, NoSchemaError, type SchemaStatus } from '../store.ts'
import type { PostgresPool } from './postgres-connection.ts'
import { postgresMigrations } from './postgres-migrations.ts'
import {
  CURRENT_SCHEMA_TABLES,
  noUsableSchema,
  PLACE_COLUMNS,
  type Place,
  placeName,
} from './postgres-place.ts'
import type { Queryable } from './postgres-statements.ts'

// Arbitrary, fixed key of the advisory lock that serializes migrations across instances.
export const MIGRATION_LOCK = 0x7065_7473_0001n

// An instance waits this long for another's migrations, and a migration may run this long, whatever
// PG_STATEMENT_TIMEOUT_MS bounds requests' statements to (docs/decisions.md, "Migrations").
const MIGRATION_TIMEOUT_MS = 10 * 60 * 1000

// The floor read through the row as JSON: null where no release recording floors has migrated yet (the
// column is absent), and the same result type whatever columns a later release adds.
const APPLIED =
  "SELECT version, to_jsonb(m) -> 'compatible_from' AS compatible_from FROM schema_migrations AS m"

/**
 * Applies the migrations the database lacks, in one transaction. Instances starting together queue on the
 * advisory lock; the first applies what is missing, the rest find it done. Each is recorded with its
 * compatibility floor; a database whose newer migrations this release cannot run on is refused.
 */
export function migrate(pool: PostgresPool, options: MigrateOptions = {}): Promise<MigrationReport> {
  return pool.transaction(
    async (client) => {
      // Tried first, so that a wait behind another process's migrations is said: a start waited in silence.
      const free = await client.query<{ locked: boolean }>('SELECT pg_try_advisory_xact_lock($1) AS locked', [
        MIGRATION_LOCK,
      ])
      if (free.rows[0]?.locked !== true) options.onWaiting?.(MIGRATION_TIMEOUT_MS)
      const [where] = (
        await client.query<Place>(`SELECT pg_advisory_xact_lock($1), ${PLACE_COLUMNS}`, [MIGRATION_LOCK])
      ).rows
      if (where?.schema === null) throw noUsableSchema(where)
      try {
        return await applyPending(client, where, options)
      } catch (error) {
        throw where === undefined ? error : mayNotCreate(error, where)
      }
    },
    { statementTimeoutMs: MIGRATION_TIMEOUT_MS },
  )
}

// SQLSTATE insufficient_privilege, as CREATE in a schema meets it (not a table another role owns).
const INSUFFICIENT_PRIVILEGE = '42501'
const NO_CREATE = /^permission denied for schema /

/**
 * A role refused CREATE says how to mend it: since PostgreSQL 15 only a database's owner may create in
 * its `public` schema, and a role given an existing database usually is not its owner.
 */
function mayNotCreate(error: unknown, { role, database, schema }: Place): unknown {
  const { code, message } = error as { code?: string; message?: string }
  if (code !== INSUFFICIENT_PRIVILEGE || !NO_CREATE.test(message ?? '')) return error
  const name = schema ?? 'public'
  return new Error(
    `the database role ${role} may not create tables in schema ${name} (${message}): ` +
      `make it the database's owner (ALTER DATABASE ${database} OWNER TO ${role}), or GRANT CREATE ON SCHEMA ${name} TO ${role}`,
    { cause: error },
  )
}

/** The columns of `schema_migrations` in the current schema, in their order. */
async function bookkeepingColumns(client: Queryable): Promise<string[]> {
  const columns = await client.query<{ name: string }>(
    `SELECT a.attname AS name FROM pg_attribute a
      WHERE a.attrelid = (SELECT c.oid FROM pg_class c WHERE c.relname = 'schema_migrations'
          AND c.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema()))
        AND a.attnum > 0 AND NOT a.attisdropped
      ORDER BY a.attnum`,
  )
  return columns.rows.map((row) => row.name)
}

/** What `migrate` does once it holds the lock. */
async function applyPending(
  client: Queryable,
  where: Place | undefined,
  { makeSchema = true }: MigrateOptions,
): Promise<MigrationReport> {
  // Looked up first: CREATE TABLE IF NOT EXISTS is refused on a read-only database (a standby) even when
  // the table is there, and an instance started on one with a current schema serves its reads.
  const tables = await client.query<{ name: string }>(CURRENT_SCHEMA_TABLES)
  const names = tables.rows.map((row) => row.name)
  const place = where === undefined ? 'the database' : placeName(where)
  if (names.length === 0 && !makeSchema) throw new NoSchemaError(place)
  const columns = names.includes('schema_migrations') ? await bookkeepingColumns(client) : []
  const foreign = foreignDatabaseRefusal(names, columns)
  if (foreign !== undefined) {
    throw new Error(`${place}: ${foreign}`)
  }
  if (!names.includes('schema_migrations'))
    await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now(),
      compatible_from integer)`)
  // Bookkeeping made before floors were recorded gains their column; its rows keep no floor. Looked up
  // first: ALTER TABLE would lock the table against running instances' readiness probes even to do nothing.
  const floors = await client.query(
    `SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema()
      AND table_name = 'schema_migrations' AND column_name = 'compatible_from'`,
  )
  if (floors.rowCount === 0)
    await client.query('ALTER TABLE schema_migrations ADD COLUMN compatible_from integer')
  const added = floors.rowCount === 0 ? { floorsColumnAdded: true as const } : {}
  const before = appliedMigrationsOf((await client.query(APPLIED)).rows)
  const pending = pendingMigrations(postgresMigrations, before)
  for (const migration of pending) {
    await client.query(migration.sql)
    await client.query('INSERT INTO schema_migrations (version, name, compatible_from) VALUES ($1, $2, $3)', [
      migration.version,
      migration.name,
      migration.compatibleFrom,
    ])
  }
  const applied = pending.map((migration) => migration.version)
  const status = schemaStatusOf(postgresMigrations, [...before, ...pending])
  return { applied, ...status, ...(names.length === 0 ? { made: place } : {}), ...added }
}

/** Where the database's schema stands for this release. */
export async function schemaStatus(pool: PostgresPool): Promise<SchemaStatus> {
  const rows = await pool.query<Record<string, unknown>>({ name: 'schema.status', text: APPLIED })
  return schemaStatusOf(postgresMigrations, appliedMigrationsOf(rows))
}
