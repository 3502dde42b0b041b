import pg from 'pg'
import { StoreUnavailableError, WriteInDoubtError } from '../../errors.ts'
import { connectBy, destroy } from './postgres-checkout.ts'
import { connectionLost, sessionEnded, storeErrorOf } from './postgres-errors.ts'
import { type PostgresStoreOptions, poolConfig } from './postgres-pool-config.ts'
import { ServerFullHold } from './postgres-server-full.ts'
import {
  beginStatement,
  bounded,
  type Queryable,
  rowsOf,
  type Statement,
  type TransactionOptions,
} from './postgres-statements.ts'

/** How long closing waits for work still running before it destroys the connections (docs/decisions.md). */
export const CLOSE_GRACE_MS = 1000

// A read whose connection is found ended within this of being sent met it ended while idle; one ended
// later was running (an operator's terminate), and is not sent again.
const ENDED_AT_ONCE_MS = 250

// How long past the server's statement timeout the client waits for its answer before it gives up.
const STATEMENT_GRACE_MS = 1000

const ignoreLost = (): void => {}

const asError = (error: unknown): Error => (error instanceof Error ? error : new Error(String(error)))

/** Resolves once `settled` (which never rejects) has, or at `deadline` (`performance.now()`) if sooner. */
async function settledBy(settled: Promise<void>, deadline: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  const due = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, Math.max(0, deadline - performance.now()))
  })
  await Promise.race([settled, due])
  clearTimeout(timer)
}

/**
 * The connection pool and its two uses, one statement or a transaction: both fail as StoreUnavailableError
 * when the database cannot do it now or the pool is closed, and answer within `callBoundMs` (connect timeout,
 * then statement timeout + 1 s: docs/decisions.md, "A hung database answers within one bound").
 */
export class PostgresPool {
  readonly #pool: pg.Pool
  /** Every open connection, idle or checked out: what a close past its grace destroys. */
  readonly #clients = new Set<pg.Client>()
  /** How to fail each call still waiting on the database: what a close past its grace does. */
  readonly #waiting = new Set<(error: Error) => void>()
  readonly #serverFull: ServerFullHold
  readonly callBoundMs: number
  /** How long the client waits for one statement's answer: the statement timeout and one second. */
  readonly #statementBoundMs: number
  #closed = false
  #closing: Promise<void> | undefined
  /** When the server last answered a statement, with rows or an error of its own (`performance.now()`). */
  #answeredAt = Number.NEGATIVE_INFINITY

  constructor(options: PostgresStoreOptions) {
    const workMs = options.statementTimeoutMs + STATEMENT_GRACE_MS
    this.callBoundMs = options.connectTimeoutMs + workMs
    this.#statementBoundMs = workMs
    this.#pool = new pg.Pool(poolConfig(options, workMs))
    this.#pool.on('error', options.onIdleError)
    // A connection given back broken (query_timeout, a dropped socket) is destroyed here, whatever pg's
    // own end would do: a polite goodbye waits on a hung server. Given back with any other error, pg's
    // pool ends it politely.
    this.#pool.on('release', (error, client) => {
      if (error && connectionLost(error)) destroy(client)
    })
    this.#serverFull = new ServerFullHold(this.#pool, () => this.#clients.size)
    this.#pool.on('connect', (client) => {
      this.#clients.add(client)
      // Whenever the pool's own listener is off it, checked out or being handed to a waiting call, a server
      // that drops it (its FATAL read with the answer that released it) would crash the process with its
      // 'error'. The calls on it fail anyway (503), and the pool drops it once given back or idle.
      client.on('error', ignoreLost)
    })
    this.#pool.on('remove', (client) => this.#clients.delete(client))
  }

  ensureOpen(): void {
    if (this.#closed) throw new StoreUnavailableError('the store is closed')
  }

  /**
   * One statement in its own transaction, durable before it is answered. Without `since`: the pool's own
   * bounds, a connection replaced after any failure, and a `reads` one sent again once if its connection had
   * ended idle (docs/decisions.md, "A read sent again"); with `since`: within `callBoundMs` of it.
   */
  async query<Row extends pg.QueryResultRow>(
    statement: Statement,
    { since, writes, reads }: Pick<TransactionOptions, 'since' | 'writes'> & { reads?: boolean } = {},
  ): Promise<Row[]> {
    this.ensureOpen()
    if (since !== undefined) {
      // Its one statement is also given up on one statement bound after it is sent, as query_timeout would;
      // its commit is sent with it.
      let sent = false
      const commitSent = writes ? () => sent : undefined
      const bounds = { since, rollsBack: false, runBoundMs: this.#statementBoundMs, commitSent }
      return this.#unlessGivenUp(
        this.#onConnection(bounds, (client) => {
          sent = true
          return rowsOf<Row>(client, statement)
        }),
        commitSent,
      )
    }
    const started = performance.now()
    try {
      const config = bounded(statement, this.#statementBoundMs)
      const { rows } = await this.#unlessGivenUp(this.#pool.query<Row>(config))
      this.#answeredAt = performance.now()
      return rows
    } catch (error) {
      this.#noteAnswer(error)
      // Held at its own connections (the server full): asked again, within the bound counted from the
      // first try, as a call with `since` is.
      if (!this.#closed && this.#serverFull.heldOn(error)) return this.query(statement, { since: started })
      // A read that found its connection ended as soon as it was sent met one ended while it sat idle (the
      // server's idle_session_timeout or a terminate, a proxy's idle timeout): it never ran. Sent once
      // more, on another connection, within the bound counted from the first try.
      const endedAtOnce = performance.now() - started < ENDED_AT_ONCE_MS && sessionEnded(error)
      if (reads && endedAtOnce && !this.#closed) return this.query(statement, { since: started })
      throw storeErrorOf(error)
    }
  }

  /**
   * What `call` settles with, or `StoreUnavailableError` as soon as a close past its grace gives up: a
   * `WriteInDoubtError` once `commitSent` says its commit was sent.
   */
  #unlessGivenUp<T>(call: Promise<T>, commitSent?: () => boolean): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const giveUp = (error: Error) =>
        reject(commitSent?.() ? new WriteInDoubtError({ cause: error }) : error)
      this.#waiting.add(giveUp)
      call.then(
        (value) => {
          this.#waiting.delete(giveUp)
          resolve(value)
        },
        (error: unknown) => {
          this.#waiting.delete(giveUp)
          reject(error)
        },
      )
    })
  }

  /**
   * Runs `work` in one transaction, committed if it resolves, rolled back if not; with `lock`, that advisory
   * lock is taken with the BEGIN. With `since` (when the caller began waiting), answered within `callBoundMs`
   * of it, the connection destroyed past that; without (migrations), each statement has its own timeout.
   */
  async transaction<T>(
    work: (client: Queryable) => Promise<T>,
    options: TransactionOptions = {},
  ): Promise<T> {
    this.ensureOpen()
    let committing = false
    const commitSent = options.writes ? () => committing : undefined
    return this.#unlessGivenUp(
      this.#onConnection({ since: options.since, rollsBack: true, commitSent }, async (connection) => {
        const own = options.statementTimeoutMs
        const ms = own === undefined ? this.#statementBoundMs : own + STATEMENT_GRACE_MS
        const client: Queryable = {
          query: (statement, values) => connection.query(bounded(statement, ms, values)),
        }
        await client.query(beginStatement(options.lock, options.statementTimeoutMs))
        const result = await work(client)
        committing = true
        await client.query('COMMIT')
        return result
      }),
      commitSent,
    )
  }

  /**
   * One connection for `run`, bounded by `since` (and, with `runBoundMs`, `run` by that much once
   * connected), given back (or destroyed) whatever happens; if `run` fails and `rollsBack`, its
   * transaction is rolled back first. Lost once `commitSent` says so, `run` fails with WriteInDoubtError.
   */
  async #onConnection<T>(
    {
      since,
      rollsBack,
      runBoundMs,
      commitSent,
    }: { since: number | undefined; rollsBack: boolean; runBoundMs?: number; commitSent?: () => boolean },
    run: (client: pg.PoolClient) => Promise<T>,
  ): Promise<T> {
    const deadline = since === undefined ? undefined : since + this.callBoundMs
    const client = await connectBy(this.#pool, this.#serverFull, deadline, () => this.#closed)
    const leftMs =
      deadline === undefined ? undefined : Math.min(deadline - performance.now(), runBoundMs ?? Infinity)
    const expiry = leftMs === undefined ? undefined : setTimeout(() => destroy(client), leftMs)
    // What the connection is given back with: an error makes the pool drop it (see the release listener).
    let broken: Error | undefined
    try {
      const result = await run(client)
      this.#answeredAt = performance.now()
      return result
    } catch (error) {
      this.#noteAnswer(error)
      // A connection that timed out or dropped is destroyed (the server rolls back when it sees it gone):
      // a ROLLBACK on it would queue behind the hung statement and wait out a second timeout. After any
      // other error, the server's or `work`'s own, a transaction is rolled back (bounded by query_timeout
      // and the deadline) and the connection kept: cut mid-transaction, a healthy connection would be lost
      // for nothing. A lone statement's own transaction has already ended with its error.
      if (connectionLost(error)) {
        broken = asError(error)
        if (commitSent?.()) throw new WriteInDoubtError({ cause: error })
      } else if (rollsBack) {
        broken = await client.query(bounded('ROLLBACK', this.#statementBoundMs)).then(
          () => undefined,
          (rollbackError: unknown) => asError(rollbackError),
        )
      }
      throw storeErrorOf(error)
    } finally {
      clearTimeout(expiry)
      client.release(broken)
    }
  }

  /**
   * A call that failed with the server's own error was answered: the server is there. Not a FATAL one: a
   * session refused (too many clients, a password, a database closed to connections) or ended answers
   * nothing.
   */
  #noteAnswer(error: unknown): void {
    if (error instanceof pg.DatabaseError && error.severity !== 'FATAL') this.#answeredAt = performance.now()
  }

  /**
   * Whether every connection the pool may open (fewer while the server is full) is open or opening and
   * checked out, and the server answered a statement within one call bound, as a hung one does not
   * (docs/decisions.md, "A busy pool is not an unreachable database").
   */
  busyWithAnsweringServer(): boolean {
    const pool = this.#pool
    // Connections being opened are counted by the pool but answer nothing: one at least must be open.
    const saturated =
      pool.idleCount === 0 && this.#clients.size > 0 && pool.totalCount >= (pool.options.max as number)
    return saturated && performance.now() - this.#answeredAt < this.callBoundMs
  }

  stats() {
    return { total: this.#pool.totalCount, idle: this.#pool.idleCount, waiting: this.#pool.waitingCount }
  }

  /**
   * Lets `pending` (queued creates, the app's last writes) and calls in flight finish, then ends the pool;
   * past `CLOSE_GRACE_MS` (from when `pending` settles or that long before `doneBy`, ending by it), destroys
   * every connection and fails what still waits (docs/decisions.md, "Closing never waits on a hung server").
   */
  close(pending: Promise<unknown> = Promise.resolve(), doneBy?: number): Promise<void> {
    this.#closing ??= (async () => {
      const settled = pending.then(
        () => {},
        () => {},
      )
      if (doneBy !== undefined) await settledBy(settled, doneBy - CLOSE_GRACE_MS)
      // Never past `doneBy`, however late the wait above woke.
      const graceMs =
        doneBy === undefined ? CLOSE_GRACE_MS : Math.min(CLOSE_GRACE_MS, doneBy - performance.now())
      let grace: NodeJS.Timeout | undefined
      const graceOver = new Promise<void>((resolve) => {
        grace = setTimeout(resolve, Math.max(0, graceMs))
      })
      const ended = settled.then(() => {
        this.#closed = true
        return this.#pool.end()
      })
      const finished = await Promise.race([ended.then(() => true), graceOver.then(() => false)])
      clearTimeout(grace)
      this.#closed = true
      if (finished) return
      for (const client of this.#clients) destroy(client)
      for (const fail of this.#waiting)
        fail(new StoreUnavailableError('the store closed before the database answered'))
    })()
    return this.#closing
  }
}
