import { incompatibility, type SchemaStatus } from '../store.ts'

/** One versioned schema change of an engine. */
export interface Migration {
  version: number
  name: string
  sql: string
  /**
   * The oldest schema version whose releases still run correctly once this change is applied, recorded with
   * it so an older release can tell whether it may start (docs/versioning.md, "Storage", says which floor).
   */
  compatibleFrom: number
}

/** A migration as the database records it: `compatibleFrom` is unset where no floor was recorded. */
export interface AppliedMigration {
  version: number
  compatibleFrom: number | undefined
}

/** The newest version a list of migrations reaches (0 for none); exported so a test can check it. */
export function latestVersion(migrations: readonly Migration[]): number {
  return migrations.at(-1)?.version ?? 0
}

/**
 * The rows of `schema_migrations` as either engine reads them: `compatible_from` is missing where no
 * release recording floors has migrated the database yet, and null in the rows older releases wrote.
 */
export function appliedMigrationsOf(rows: readonly Record<string, unknown>[]): AppliedMigration[] {
  return rows.map((row) => ({
    version: Number(row.version),
    compatibleFrom:
      row.compatible_from === undefined || row.compatible_from === null
        ? undefined
        : Number(row.compatible_from),
  }))
}

/** The schema of a database that has `applied`, for a release with `migrations`. */
export function schemaStatusOf(
  migrations: readonly Migration[],
  applied: readonly AppliedMigration[],
): SchemaStatus {
  return {
    current: Math.max(0, ...applied.map((migration) => migration.version)),
    latest: latestVersion(migrations),
    // A migration with no recorded floor is taken to need its own version: nothing says it is compatible.
    compatibleFrom: Math.max(0, ...applied.map((migration) => migration.compatibleFrom ?? migration.version)),
  }
}

/**
 * The migrations a database that has `applied` still lacks, in order. A database whose newer migrations
 * do not keep this release's schema working is refused rather than misread; one whose newer migrations
 * do needs nothing from this release.
 */
export function pendingMigrations(
  migrations: readonly Migration[],
  applied: readonly AppliedMigration[],
): Migration[] {
  const refused = incompatibility(schemaStatusOf(migrations, applied))
  if (refused !== undefined) throw new Error(refused)
  const done = new Set(applied.map((migration) => migration.version))
  return migrations.filter((migration) => !done.has(migration.version))
}

/**
 * Why a copy cannot take a source of `status`, if so: it moves only the tables and columns this release
 * knows, so a source at any other schema would be copied short.
 */
export function copySourceRefusal({ current, latest }: SchemaStatus): string | undefined {
  if (current < latest) {
    return `the source is at schema version ${current}, not ${latest}: run "petstore migrate" on it first`
  }
  if (current > latest) {
    return `the source is at schema version ${current}, newer than this release's (${latest}): copy with the release that made it`
  }
  return undefined
}

// The columns of the service's `schema_migrations` in every release (`compatible_from` came later); other
// migration tools name theirs alike (golang-migrate: version, dirty; Rails: version; Ecto: version,
// inserted_at), and adding our column to theirs, or reading their versions as ours, would change their data.
const BOOKKEEPING = ['version', 'name', 'applied_at']
const BOOKKEEPING_LATER = 'compatible_from'

/** Whether a `schema_migrations` of `columns` is the service's own. */
export function isServiceBookkeeping(columns: readonly string[]): boolean {
  return (
    BOOKKEEPING.every((column) => columns.includes(column)) &&
    columns.every((column) => BOOKKEEPING.includes(column) || column === BOOKKEEPING_LATER)
  )
}

/**
 * Why a database is not migrated: it holds `tables` and no `schema_migrations`, or one whose `columns`
 * are not the service's. It is another application's (a `DATABASE_URL` pointing at the wrong one), which
 * creating ours in would change.
 */
export function foreignDatabaseRefusal(
  tables: readonly string[],
  columns: readonly string[],
): string | undefined {
  const leftAsItIs =
    'and is left as it is; name a Pet Store database or a new one (on PostgreSQL, a schema of its own ' +
    'will do)'
  if (tables.includes('schema_migrations')) {
    if (isServiceBookkeeping(columns)) return undefined
    const bookkeeping = `its schema_migrations (${columns.join(', ')}) is another tool's, not the service's`
    return `it is not a Pet Store database: ${bookkeeping}, ${leftAsItIs}`
  }
  if (tables.length === 0) return undefined
  const named = tables.slice(0, 3).join(', ') + (tables.length > 3 ? ', …' : '')
  const others = `it holds other tables (${named}) and no schema_migrations`
  return `it is not a Pet Store database: ${others}, ${leftAsItIs}`
}
