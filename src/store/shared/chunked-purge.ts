import { setTimeout as sleep } from 'node:timers/promises'

/** Rows one purge statement deletes at most: about 2 ms of SQLite work, a short lock in PostgreSQL. */
export const PURGE_CHUNK_ROWS = 1000

/**
 * Deletes in chunks of PURGE_CHUNK_ROWS until a chunk comes back short or `signal` aborts (checked between
 * chunks: the chunk in progress always finishes). Resolves to how many rows went.
 */
export async function purgeInChunks(
  deleteChunk: (rows: number) => Promise<number>,
  signal?: AbortSignal,
): Promise<number> {
  let total = 0
  while (!signal?.aborted) {
    const started = performance.now()
    const deleted = await deleteChunk(PURGE_CHUNK_ROWS)
    total += deleted
    if (deleted < PURGE_CHUNK_ROWS) break
    // A pause as long as the chunk took: the purge holds at most about half of the event loop (SQLite is
    // synchronous) and of the write lock, so requests and creates keep their turn.
    const pause = Math.max(1, performance.now() - started)
    await sleep(pause, undefined, signal ? { signal } : {}).catch(() => {})
  }
  return total
}
