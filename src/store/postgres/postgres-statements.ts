import type pg from 'pg'

/** A statement with its parameters, as the driver takes it (named: prepared once per connection). */
export interface Statement {
  name: string
  text: string
  values?: unknown[]
}

/** What the query modules need from a connection: one statement, its result back. */
export interface Queryable {
  query<Row extends pg.QueryResultRow = pg.QueryResultRow>(
    statement: string | pg.QueryConfig,
    values?: unknown[],
  ): Promise<pg.QueryResult<Row>>
}

/** `column` as ISO 8601 UTC text to the millisecond: the form both engines report (`keys list`). */
export const isoUtc = (column: string) =>
  `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS ${column}`

/**
 * `column` as UTC ISO text, to PostgreSQL's microsecond, for what a copy or a restore's carry writes back; a
 * whole millisecond as SQLite writes it (`.753Z`), so its text survives a round trip (docs/decisions.md,
 * "Timestamps written back to the microsecond").
 */
export const exactUtc = (column: string) => `CASE WHEN extract(microseconds FROM ${column})::bigint % 1000 = 0
  THEN to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
  ELSE to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') END AS ${column}`

/** `statement` as the driver takes it, given up on `ms` after it is sent (the driver's query_timeout). */
export function bounded(statement: string | pg.QueryConfig, ms: number, values?: unknown[]): pg.QueryConfig {
  // Values given apart win over a config's own, as the driver has it.
  const config = typeof statement === 'string' ? { text: statement } : statement
  return { ...config, ...(values === undefined ? {} : { values }), query_timeout: ms } as pg.QueryConfig
}

/**
 * One statement's rows, the driver given a callback and no query_timeout (the caller bounds it): with the
 * driver's promise form, or with its query_timeout, a batch's statement values, messages and rows were
 * measured reaching the old generation (docs/decisions.md, "PostgreSQL statements die young").
 */
export function rowsOf<Row extends pg.QueryResultRow>(
  client: pg.ClientBase,
  statement: Statement,
): Promise<Row[]> {
  return new Promise((resolve, reject) => {
    client.query<Row>(statement, (error, result) => (error ? reject(error) : resolve(result.rows)))
  })
}

/**
 * `synchronous_commit` on where it is off, for the session or (`local`) the transaction alone; `local` and
 * the replication settings, which all flush, are kept (docs/decisions.md, "Durability").
 */
export function durableCommits(local: boolean): string {
  return (
    `SELECT set_config('synchronous_commit', 'on', ${local}) ` +
    "WHERE current_setting('synchronous_commit') = 'off'"
  )
}

// What every transaction is, whatever its session holds: behind PgBouncer's transaction pooling a session
// set up by the pool's onConnect (postgres-pool-config.ts) may not be the server connection it runs on.
const TRANSACTION = `BEGIN ISOLATION LEVEL READ COMMITTED; ${durableCommits(true)}`

/** BEGIN, its own timeouts and the advisory lock if given, as one simple query: one round trip. */
export function beginStatement(lock?: bigint, ms?: number): string {
  // Numbers and bigints print as digits only: nothing to quote. The pause between two of its statements
  // is bounded as one statement is (the session's own bound is PG_STATEMENT_TIMEOUT_MS for both).
  const timeouts =
    ms === undefined
      ? ''
      : `; SET LOCAL statement_timeout = ${ms}; SET LOCAL idle_in_transaction_session_timeout = ${ms}`
  return `${TRANSACTION}${timeouts}${lock === undefined ? '' : `; SELECT pg_advisory_xact_lock(${lock})`}`
}

/** How the pool runs a statement or a transaction (PostgresPool's `query` and `transaction`). */
export interface TransactionOptions {
  /** When the caller started waiting (`performance.now()`): the transaction ends within one bound of it. */
  since?: number
  /** Key of a transaction-scoped advisory lock to hold before the work starts. */
  lock?: bigint
  /** It writes: lost once its commit is sent, it fails with WriteInDoubtError, not as unavailable. */
  writes?: boolean
  /** Its own statement timeout, in place of PG_STATEMENT_TIMEOUT_MS (migrations: waits, schema changes). */
  statementTimeoutMs?: number
}
