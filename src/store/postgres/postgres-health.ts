import type { StoreHealth } from '../store.ts'
import type { PostgresPool } from './postgres-connection.ts'

// On in a hot standby's sessions and under default_transaction_read_only: every write would fail.
const READ_ONLY = {
  name: 'health.read-only',
  text: "SELECT current_setting('transaction_read_only') AS value",
}

/** What readiness and a refused write say of a database that takes no writes; safe to show to anyone. */
export const READ_ONLY_REASON =
  'the database is read-only (a standby, or default_transaction_read_only); writes resume once it takes them'

/**
 * Readiness beyond reachability: whether the database takes writes, as a failover onto a standby or a
 * read-only default leaves it. The server's own faults (a full disk is SQLSTATE 53100) answer each call
 * with 503, and an unreachable server already fails readiness.
 */
export async function postgresHealth(pool: PostgresPool): Promise<StoreHealth> {
  const [row] = await pool.query<{ value: string }>(READ_ONLY)
  return row?.value === 'on' ? { writable: false, reason: READ_ONLY_REASON } : { writable: true }
}
