/** One versioned schema change of an engine. */
export interface Migration {
  version: number
  name: string
  sql: string
}

/** The newest version a list of migrations reaches (0 for none). */
export function latestVersion(migrations: readonly Migration[]): number {
  return migrations.at(-1)?.version ?? 0
}

/**
 * The migrations a database that has `applied` still lacks, in order. A database with a version this
 * release does not know is newer than the code: it is refused rather than misread.
 */
export function pendingMigrations(migrations: readonly Migration[], applied: Iterable<number>): Migration[] {
  const done = new Set(applied)
  const latest = latestVersion(migrations)
  const newest = Math.max(0, ...done)
  if (newest > latest) {
    throw new Error(`database schema version ${newest} is newer than this release knows (${latest})`)
  }
  return migrations.filter((migration) => !done.has(migration.version))
}
