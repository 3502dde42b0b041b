import type pg from 'pg'

/** SQLSTATE 53300, too_many_connections: the server's max_connections, or the role's CONNECTION LIMIT. */
const TOO_MANY_CONNECTIONS = '53300'
// How long the pool stays at the connections it has before it tries to open another.
const HELD_MS = 1000

/** What of pg-pool's own the hold uses: its `max`, read at each checkout, and its queue's pulse. */
type HeldPool = pg.Pool & { _pulseQueue?: () => void }

/**
 * While the server has no slot left for a new connection, the pool is held at the connections it has:
 * calls wait for one of those (within their bound) instead of each failing at once and costing the
 * server a refused login (docs/decisions.md, "A full server"). A second later it may grow again.
 */
export class ServerFullHold {
  readonly #pool: HeldPool
  readonly #connected: () => number
  readonly #max: number
  #release: NodeJS.Timeout | undefined

  /** `connected` counts the pool's connections that are open (its `totalCount` counts those opening too). */
  constructor(pool: pg.Pool, connected: () => number) {
    this.#pool = pool
    this.#connected = connected
    this.#max = pool.options.max ?? 10
  }

  /**
   * Whether `error` is the server refusing a new connection while this pool holds others: the pool is
   * then held at those, and the call that met it should ask the pool again, once (it waits for one).
   * With none open, nothing is held: the call fails at once, as before any hold.
   */
  heldOn(error: unknown): boolean {
    if ((error as { code?: string }).code !== TOO_MANY_CONNECTIONS) return false
    const open = Math.min(this.#connected(), this.#max)
    if (open === 0) return false
    // pg-pool reads `max` at each checkout: below it a connection is opened, at it a call waits.
    this.#pool.options.max = open
    clearTimeout(this.#release)
    this.#release = setTimeout(() => this.#grow(), HELD_MS).unref()
    return true
  }

  /**
   * Lets the pool grow again and starts one connection for the first call waiting, which pg-pool serves
   * only on a release: opened, it serves the queue in turn; refused (still full), it fails that call and
   * the pool is held again (docs/decisions.md, "A full server").
   */
  #grow(): void {
    const pool = this.#pool
    pool.options.max = this.#max
    const pulse = pool._pulseQueue
    if (typeof pulse === 'function' && pool.waitingCount > 0 && pool.totalCount < this.#max) pulse.call(pool)
  }
}
