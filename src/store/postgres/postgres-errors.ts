import pg from 'pg'
import { type CertificateRefusal, refusedCertificate } from '../../certificate-refusal.ts'
import { SchemaMissingError, StoreUnavailableError, TableAccessRefusedError } from '../../errors.ts'
import { DuplicateKeyNameError } from '../store.ts'

// SQLSTATE 25006, read_only_sql_transaction: a failover onto a standby, or a read-only default. Every
// instance shares the database, so readiness does not follow it (docs/decisions.md, "Unavailable vs wrong").
const READ_ONLY = 'the database is read-only (a standby, or default_transaction_read_only)'

// Only a new connection meets these (none of the service's statements can): the role's login refused
// (class 28: a rotated password, NOLOGIN), its database gone (3D000) or closed to connections (55000,
// ALLOW_CONNECTIONS false). An operator must act; until then the database is as good as down.
const CONNECTION_REFUSED = /^28|^3D000$|^55000$/

// pg's words for a server that refuses TLS when the URL's sslmode asks for it.
const NO_TLS_SERVER = 'The server does not support SSL connections'
// Said of its URL, not DATABASE_URL: `petstore copy` opens its --from and --to with the same store.
const NO_TLS = 'the database takes no TLS connections, and its URL asks for them (sslmode)'

// undefined_table, undefined_column, invalid_schema_name: what the statements name is gone from under a
// running service (SchemaMissingError), as it is from every instance until an operator acts.
const SCHEMA_GONE = new Set(['42P01', '42703', '3F000'])

// insufficient_privilege: a table the statements use taken from the service's role under it (its owner
// changed by a restore run as another role, a grant revoked). As a dropped table, every instance's until
// an operator acts; a role that may not create in its schema is said by migrate (postgres-migrator.ts).
const NO_PRIVILEGE = '42501'

/** SQLSTATE classes and codes that mean "the database cannot do this now" rather than "this is wrong". */
const UNAVAILABLE_STATES = /^(08|53|57P|58)|^57014$|^55P03$|^40001$|^40P01$/
const NETWORK_ERRORS = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EPIPE',
  'EAI_AGAIN',
])
// pg-pool's words when a call waited its connect timeout in the queue of a pool whose every connection is
// checked out: busy with slow statements, a lock, or a server that has stopped answering them.
const POOL_QUEUE_TIMEOUT = 'timeout exceeded when trying to connect'
const POOL_BUSY =
  "every connection of this instance's pool is busy (slow statements, a lock, or a server not answering)"

// What an operator does when a command stops on a database that refuses writes (StoreUnavailableError's
// remedy; a serving instance goes on with reads and retries by itself).
const DISK_FULL = '53100'
const TAKE_WRITES = 'make it take writes (a primary, default_transaction_read_only off), then run it again'
const FREE_SPACE = "free space on the database's disk, then run it again"

/**
 * The driver's words for a connection that is gone, or whose reply is overdue (its query_timeout): how its
 * messages begin, so that an error the caller's own code threw, naming a table `session_timeouts`, is not
 * taken for one.
 */
const LOST_CONNECTION =
  /^(Connection terminated|Connection ended|Query read timeout|timeout expired|Client has encountered a connection error|Client was closed)/
// idle_in_transaction_session_timeout: the server ended a session left idle inside a transaction.
const IDLE_IN_TRANSACTION_ENDED = '25P03'
/** The driver's words when the server asks for a password and none was given (URL, PGPASSWORD, .pgpass). */
const NO_PASSWORD = /client password must be a string/
const NO_PASSWORD_GIVEN =
  "the PostgreSQL server asks for a password, and none was given (DATABASE_URL, or copy's --from or --to): " +
  "set PGPASSWORD, or put it in DATABASE_URL (not in copy's arguments: ps shows them)"

/**
 * A driver or server error as callers should see it: `StoreUnavailableError` (503), naming which, for what
 * no request caused (the database down, full, read-only, refusing this service, its role or its TLS, a table
 * gone, a timeout, no free connection: docs/decisions.md, "Unavailable vs wrong"); anything else unchanged.
 */
export function storeErrorOf(error: unknown): unknown {
  const { code, message } = error as { code?: string; message?: string }
  if (code === '25006') return new StoreUnavailableError(READ_ONLY, { cause: error, remedy: TAKE_WRITES })
  if (code !== undefined && SCHEMA_GONE.has(code)) return new SchemaMissingError({ cause: error })
  if (code === NO_PRIVILEGE) return new TableAccessRefusedError({ cause: error })
  // The server's reason (no password in it) is the cause, which the log and the CLI's line append.
  if (code !== undefined && CONNECTION_REFUSED.test(code)) {
    return new StoreUnavailableError("the database refuses this service's connections", { cause: error })
  }
  if (message === POOL_QUEUE_TIMEOUT) return new StoreUnavailableError(POOL_BUSY, { cause: error })
  // Until an operator mends the certificate or the URL, the database is as good as down.
  const certificate = refusedCertificate(error)
  if (certificate !== undefined)
    return new StoreUnavailableError(certificateRefused(certificate), { cause: error })
  if (message === NO_TLS_SERVER) return new StoreUnavailableError(NO_TLS, { cause: error })
  // A file the URL names (sslrootcert, sslcert, sslkey), read at each new connection: gone or unreadable.
  const { syscall, path } = error as { syscall?: string; path?: string }
  if (syscall === 'open' && (code === 'ENOENT' || code === 'EACCES')) {
    return new StoreUnavailableError(`the database URL names a file that cannot be read (${code}): ${path}`, {
      cause: error,
    })
  }
  if (NO_PASSWORD.test(message ?? '')) return new Error(NO_PASSWORD_GIVEN, { cause: error })
  if (code !== undefined && UNAVAILABLE_STATES.test(code)) {
    const remedy = code === DISK_FULL ? FREE_SPACE : undefined
    return new StoreUnavailableError(unavailableReason(code), { cause: error, remedy })
  }
  const unreachable =
    (code !== undefined && NETWORK_ERRORS.has(code)) ||
    code === IDLE_IN_TRANSACTION_ENDED ||
    LOST_CONNECTION.test(message ?? '')
  return unreachable ? new StoreUnavailableError('the database is unreachable', { cause: error }) : error
}

/** What the log and the start's line say of a server certificate refused, and what to mend. */
function certificateRefused({ code, problem, unsigned }: CertificateRefusal): string {
  const remedy = unsigned ? ": its URL's sslrootcert must name the CA that signed it" : ''
  return `the database's TLS certificate ${problem} (${code})${remedy}`
}

/** The condition an unavailable SQLSTATE names, for the log line an operator reads first. */
function unavailableReason(code: string): string {
  if (code.startsWith('08')) return 'the database is unreachable'
  if (code.startsWith('53')) return 'the database is out of resources (disk, memory or connections)'
  if (code.startsWith('57P')) return 'the database is shutting down, starting, or gone'
  if (code.startsWith('58')) return 'the database reports a system error (its disk or files)'
  if (code === '57014') return 'a statement was cancelled (PG_STATEMENT_TIMEOUT_MS, or an operator)'
  if (code === '55P03')
    return 'a statement waited for a lock past lock_timeout (set on the database or its role)'
  return 'a transaction met another (a serialization failure or a deadlock)'
}

/**
 * Whether `error` leaves its connection unusable: a socket error, or the driver giving up on a silent
 * server or a dropped connection. Not an error the server sent, nor one the caller's own code threw.
 */
export function connectionLost(error: unknown): boolean {
  if (error instanceof pg.DatabaseError) return false
  const { code, message } = error as { code?: string; message?: string }
  return (code !== undefined && NETWORK_ERRORS.has(code)) || LOST_CONNECTION.test(message ?? '')
}

// SQLSTATE admin_shutdown (pg_terminate_backend, a server stopping) and idle_session_timeout: the server
// ended the session, which a statement sent meanwhile meets; the socket's reset or broken pipe: a proxy
// (or the server) closed it.
const SESSION_ENDED = new Set(['57P01', '57P05', 'ECONNRESET', 'EPIPE'])

/**
 * Whether `error` is a connection found ended as a statement was sent on it: by the server, or cut by a
 * proxy while it sat idle in the pool. Never a timeout: a server that does not answer is not asked twice.
 */
export function sessionEnded(error: unknown): boolean {
  const { code, message } = error as { code?: string; message?: string }
  return (code !== undefined && SESSION_ENDED.has(code)) || message === 'Connection terminated unexpectedly'
}

// A write refused by a database that still reads: read-only (a standby), its disk full.
const WRITES_REFUSED = new Set(['25006', DISK_FULL])

/** Whether `error` (as `storeErrorOf` made it) is the database refusing a write it could still read. */
export function refusedWrites(error: unknown): error is StoreUnavailableError {
  const code = (error as { cause?: { code?: string } }).cause?.code
  return error instanceof StoreUnavailableError && code !== undefined && WRITES_REFUSED.has(code)
}

/** A key insert that hit the one-active-key-per-name index becomes the error callers expect. */
export function keyNameTaken(error: unknown, name: string): unknown {
  return (error as { constraint?: string }).constraint === 'api_keys_active_name'
    ? new DuplicateKeyNameError(name)
    : error
}
