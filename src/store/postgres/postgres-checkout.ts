import type pg from 'pg'
import { StoreUnavailableError } from '../../errors.ts'
import { storeErrorOf } from './postgres-errors.ts'
import type { ServerFullHold } from './postgres-server-full.ts'

// Taking a connection from the pool within a call's bound, and cutting one (postgres-connection.ts).

/** Cuts a connection at once, whatever it is waiting for (as the pool itself does on a connect timeout). */
export function destroy(client: pg.ClientBase): void {
  ;(client as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy()
}

/**
 * A connection from `pool`; `StoreUnavailableError` after the connect timeout, or at `deadline`. Refused
 * for the server being full, it is asked for once more unless `closed()` or out of time.
 */
export async function connectBy(
  pool: pg.Pool,
  serverFull: ServerFullHold,
  deadline: number | undefined,
  closed: () => boolean,
): Promise<pg.PoolClient> {
  if (deadline !== undefined && performance.now() >= deadline) {
    throw new StoreUnavailableError('no database connection in time')
  }
  // pg makes each new connection's settings from the URL as it connects, and throws if a file it names
  // (sslrootcert) cannot be read: a rejection like any other, mapped below.
  const connecting = Promise.try(() => pool.connect()).catch((error: unknown) => {
    // Held at its own connections (the server full): asked again once, unless closed or out of time.
    const left = deadline === undefined || performance.now() < deadline
    if (!serverFull.heldOn(error) || closed() || !left) throw error
    return pool.connect().catch((again: unknown) => {
      // Refused again (a probe as the hold ended): the pool is held again, and the call fails.
      serverFull.heldOn(again)
      throw again
    })
  })
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((_, reject) => {
    if (deadline === undefined) return
    timer = setTimeout(
      () => reject(new StoreUnavailableError('no database connection in time')),
      deadline - performance.now(),
    )
  })
  try {
    return await Promise.race([connecting, late])
  } catch (error) {
    // One that comes after all goes back to the pool unused.
    connecting.then(
      (client) => client.release(),
      () => {},
    )
    throw storeErrorOf(error)
  } finally {
    clearTimeout(timer)
  }
}
