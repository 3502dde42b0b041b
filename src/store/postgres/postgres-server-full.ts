import type pg from 'pg'

/** SQLSTATE 53300, too_many_connections: the server's max_connections, or the role's CONNECTION LIMIT. */
const TOO_MANY_CONNECTIONS = '53300'
// How long the pool stays at the connections it has before it tries to open another.
const HELD_MS = 1000

/**
 * While the server has no slot left for a new connection, the pool is held at the connections it has:
 * calls wait for one of those (within the connect timeout) instead of each failing at once and costing
 * the server a refused login (docs/decisions.md, "A full server"). A second later it may grow again.
 */
export class ServerFullHold {
  readonly #pool: pg.Pool
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
   * Whether `error` is the server refusing a new connection: the pool is then held at the connections it
   * has, and the call that met it should ask the pool again, once: it waits for one of those, or for one
   * still opening; with none, its own new try is the only one made at a time, and fails fast if refused.
   */
  heldOn(error: unknown): boolean {
    if ((error as { code?: string }).code !== TOO_MANY_CONNECTIONS) return false
    // pg-pool reads `max` at each checkout: below it a connection is opened, at it a call waits.
    this.#pool.options.max = Math.max(1, this.#connected())
    clearTimeout(this.#release)
    this.#release = setTimeout(() => {
      this.#pool.options.max = this.#max
    }, HELD_MS).unref()
    return true
  }
}
