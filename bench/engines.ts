import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import pg from 'pg'
import {
  type PostgresServer,
  postgresUnavailableReason,
  startPostgres,
} from '../test/helpers/postgres-server.ts'
import type { EngineName } from './options.ts'

export const ENGINE_LABELS: Record<EngineName, string> = { sqlite: 'SQLite', postgres: 'PostgreSQL' }

let postgres: Promise<PostgresServer> | undefined

/** Why this engine cannot be measured here, or undefined when it can. */
export function engineUnavailableReason(engine: EngineName): string | undefined {
  return engine === 'postgres' ? postgresUnavailableReason() : undefined
}

/**
 * A fresh, empty store of this engine: a new SQLite file in the run's directory, or a new database on a
 * throwaway PostgreSQL server (started once; the helper stops it and removes its files at process exit).
 */
export async function freshDatabaseUrl(engine: EngineName, directory: string): Promise<string> {
  if (engine === 'sqlite') return `sqlite:${join(directory, 'bench.db')}`
  postgres ??= startPostgres()
  return (await postgres).createDatabase()
}

/** The engine's own version, for the report: SQLite as built into this Node.js, or the server's. */
export async function engineVersion(engine: EngineName, databaseUrl: string): Promise<string> {
  if (engine === 'sqlite') {
    const database = new DatabaseSync(':memory:')
    const row = database.prepare('SELECT sqlite_version() AS version').get() as { version: string }
    database.close()
    return `SQLite ${row.version}`
  }
  const client = new pg.Client({ connectionString: databaseUrl })
  await client.connect()
  try {
    const result = await client.query<{ server_version: string }>('SHOW server_version')
    return `PostgreSQL ${result.rows[0]?.server_version ?? 'unknown'}`
  } finally {
    await client.end()
  }
}
