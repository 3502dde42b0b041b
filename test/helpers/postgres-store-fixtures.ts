/** Stores and plain connections on fresh databases of the shared throwaway PostgreSQL server. */
import pg from 'pg'
import { PostgresStore, type PostgresStoreOptions } from '../../src/store/postgres/postgres-store.ts'
import { waitUntil } from './bounded-wait.ts'
import type { Cleanup } from './cleanup.ts'
import { sharedPostgres } from './postgres-server.ts'

export const emptyDatabase = async () => (await sharedPostgres()).createDatabase()

/** The settings of a test's store (or of another user of the pool) on `url`, with what the test changes. */
export function storeOptions(url: string, options: Partial<PostgresStoreOptions> = {}): PostgresStoreOptions {
  return {
    url,
    poolSize: 5,
    statementTimeoutMs: 5000,
    connectTimeoutMs: 2000,
    onIdleError: () => {},
    ...options,
  }
}

/** A store on `url`, not migrated, closed after the test. */
export function storeOn(t: Cleanup, url: string, options: Partial<PostgresStoreOptions> = {}): PostgresStore {
  const store = new PostgresStore(storeOptions(url, options))
  t.after(() => store.close())
  return store
}

/** A plain connection to the same database, for what the store never does (DDL, locks, EXPLAIN). */
export async function adminOn(t: Cleanup, url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  t.after(() => client.end())
  return client
}

export async function migratedStore(t: Cleanup, options: Partial<PostgresStoreOptions> = {}) {
  const url = await emptyDatabase()
  const store = storeOn(t, url, options)
  await store.migrate()
  return { url, store, admin: await adminOn(t, url) }
}

/** Polls `sql` on `client` until it returns a row; fails with `what` once `options.timeoutMs` has passed. */
export async function untilRows(
  client: pg.Client,
  sql: string,
  what: string,
  options?: { timeoutMs?: number; everyMs?: number },
): Promise<void> {
  await waitUntil(async () => (await client.query(sql)).rows.length > 0, what, options)
}
