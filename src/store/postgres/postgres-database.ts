import pg from 'pg'
import { StoreUnavailableError } from '../../errors.ts'
import { storeErrorOf } from './postgres-errors.ts'

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

// int8 arrives as text; it becomes a bigint here, so no id or category is ever rounded.
const INT8_OID = 20
const types = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8_OID ? BigInt : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
}

/** What the query modules need from a connection: one statement, rows back. */
export type Queryable = Pick<pg.PoolClient, 'query'>

/**
 * The connection pool, and the two ways the store uses it: one named statement, or a transaction. Both
 * turn "the database cannot do this now" into `StoreUnavailableError`, and both refuse once closed.
 */
export class PostgresDatabase {
  readonly #pool: pg.Pool
  #closed = false

  constructor(options: PostgresStoreOptions) {
    this.#pool = new pg.Pool({
      connectionString: options.url,
      max: options.poolSize,
      connectionTimeoutMillis: options.connectTimeoutMs,
      statement_timeout: options.statementTimeoutMs,
      query_timeout: options.statementTimeoutMs + 1000,
      idleTimeoutMillis: 30_000,
      application_name: 'petstore',
      types,
    })
    this.#pool.on('error', options.onIdleError)
  }

  ensureOpen(): void {
    if (this.#closed) throw new StoreUnavailableError('the store is closed')
  }

  /** Runs one named (prepared once per connection) statement outside any transaction. */
  async query<Row extends pg.QueryResultRow>(
    name: string,
    text: string,
    values: unknown[] = [],
  ): Promise<Row[]> {
    this.ensureOpen()
    try {
      return (await this.#pool.query<Row>({ name, text, values })).rows
    } catch (error) {
      throw storeErrorOf(error)
    }
  }

  /** Runs `work` in one transaction on one connection: committed if it resolves, rolled back if not. */
  async transaction<T>(work: (client: Queryable) => Promise<T>): Promise<T> {
    this.ensureOpen()
    let client: pg.PoolClient
    try {
      client = await this.#pool.connect()
    } catch (error) {
      throw storeErrorOf(error)
    }
    // Checked out, a connection has no pool listener: if the server drops it, the 'error' it emits would
    // crash the process. Its queries fail anyway (and are answered 503), so the event itself is dropped.
    const ignoreLost = () => {}
    client.on('error', ignoreLost)
    let broken = false
    try {
      await client.query('BEGIN')
      const result = await work(client)
      await client.query('COMMIT')
      return result
    } catch (error) {
      // A connection that cannot even roll back is discarded rather than returned to the pool.
      broken = await client.query('ROLLBACK').then(
        () => false,
        () => true,
      )
      throw storeErrorOf(error)
    } finally {
      client.removeListener('error', ignoreLost)
      client.release(broken)
    }
  }

  stats() {
    return { total: this.#pool.totalCount, idle: this.#pool.idleCount, waiting: this.#pool.waitingCount }
  }

  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    await this.#pool.end()
  }
}
