import pg from 'pg'
import { bounded, durableCommits } from './postgres-statements.ts'

export interface PostgresStoreOptions {
  url: string
  poolSize: number
  /** Server-side limit on one statement; the client gives up one second later if the server is silent. */
  statementTimeoutMs: number
  /** How long to wait for a connection (new or from the pool) before answering 503. */
  connectTimeoutMs: number
  /** Told about connections that fail while idle in the pool (they are replaced, never fatal). */
  onIdleError: (error: Error) => void
}

/**
 * The pool of a command on `url` (copy's dump and load, restore's carry): few statements, so one
 * connection, and a minute for each (a copy's chunk).
 */
export function commandPool(url: string): PostgresStoreOptions {
  return { url, poolSize: 1, statementTimeoutMs: 60_000, connectTimeoutMs: 10_000, onIdleError: () => {} }
}

// int8 arrives as text; it becomes a bigint here, so no id or category is ever rounded.
const INT8_OID = 20
const types = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8_OID ? BigInt : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
}

// An acknowledged write must outlive a crash of the database's machine: a session that would commit
// asynchronously (synchronous_commit=off for the server, database or role) waits for the WAL's flush
// again. Every transaction is written for read committed: a default of repeatable read or serializable
// (the server's, database's or role's) failed concurrent creates of one Idempotency-Key as 503s (40001).
const READ_COMMITTED = "SELECT set_config('default_transaction_isolation', 'read committed', false)"
const SESSION_SETTINGS = `${READ_COMMITTED}; ${durableCommits(false)}`

/**
 * How the pool of `postgres-connection.ts` connects and what each session is: its bounds, exact int8,
 * durable commits, read committed. `workMs` bounds one statement's answer (the statement timeout and
 * one second).
 */
export function poolConfig(options: PostgresStoreOptions, workMs: number): pg.PoolConfig {
  return {
    connectionString: options.url,
    max: options.poolSize,
    connectionTimeoutMillis: options.connectTimeoutMs,
    statement_timeout: options.statementTimeoutMs,
    // No query_timeout for the whole pool: a lone statement with a deadline (a batch of creates) is cut
    // by its connection's expiry instead, so that its objects die young (see `rowsOf`); every other
    // statement is given its own (`bounded`).
    // A transaction whose client vanished (destroyed here, or cut off by the network) would hold its
    // locks, the insert lock included, for every instance; the server ends it instead.
    idle_in_transaction_session_timeout: options.statementTimeoutMs,
    // A quiet instance gives its connections back to the server after 30 s (pg's 10 s would reopen them
    // between the spells of traffic a balancer's probes and a quiet store send).
    idleTimeoutMillis: 30_000,
    application_name: 'petstore',
    types,
    // Awaited before the pool hands the new connection out; a failure ends it and fails that call.
    onConnect: (client) => client.query(bounded(SESSION_SETTINGS, workMs)),
  }
}
