import { LRUCache } from 'lru-cache'
import type { Representation } from './representation.ts'

/** What an entry is charged besides its body: the key, the ETag and the cache's own bookkeeping. */
const ENTRY_OVERHEAD_BYTES = 200

/**
 * Serialized GET answers that can never change, kept in memory (least recently used first out, bounded in
 * bytes). Pets are immutable and ids only grow, so a pet, and a list page that is full and followed by
 * more pets, are the same forever — on every instance, whoever adds pets meanwhile. Partial last pages and
 * 404s are never kept. (A database restored from an older backup under a running server is the one case
 * this does not cover: restart the service after a restore.)
 *
 * A hit only relinks the entry's index in lru-cache's arrays. Recency kept by deleting and re-inserting in
 * a Map instead made V8 rebuild the long-lived Map's table in old space every few hits: about 200 bytes of
 * old-generation garbage per request, which set the process's peak memory under load.
 */
export class ReadCache {
  readonly #entries: LRUCache<string, Representation> | undefined

  constructor(maxBytes: number) {
    this.#entries =
      maxBytes === 0
        ? undefined
        : new LRUCache({
            maxSize: maxBytes,
            sizeCalculation: (entry) => entry.body.length + ENTRY_OVERHEAD_BYTES,
          })
  }

  get(key: string): Representation | undefined {
    return this.#entries?.get(key)
  }

  /** Keeps the first answer for a key; an entry larger than the whole budget is not kept. */
  set(key: string, entry: Representation): void {
    if (this.#entries === undefined || this.#entries.has(key)) return
    this.#entries.set(key, entry)
  }
}
