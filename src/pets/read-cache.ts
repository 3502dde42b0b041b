import { LRUCache } from 'lru-cache'
import type { Representation } from './representation.ts'

/** What an entry is charged besides its body: the key, the ETag and the cache's own bookkeeping. */
const ENTRY_OVERHEAD_BYTES = 200

/**
 * Serialized GET answers that can never change, kept in memory (least recently used first out, bounded in
 * bytes). Pets are immutable and ids only grow, so a pet, and a list page that is full and followed by
 * more pets, are the same forever — on every instance, whoever adds pets meanwhile. Partial last pages and
 * 404s are never kept. A copy into the store adds pets among those listed: while one is under way no page
 * is kept, and when one begins or ends every answer is let go (`forgetAll`, pets/copy-watch.ts). (A
 * database restored from an older backup under a running server is not covered: restart after a restore.)
 *
 * A hit only relinks the entry's index in lru-cache's arrays. Recency kept by deleting and re-inserting in
 * a Map would make V8 rebuild the long-lived Map's table in old space every few hits: about 200 bytes of
 * old-generation garbage per request, which would set the process's peak memory under load.
 */
export class ReadCache {
  readonly #entries: LRUCache<string, Representation> | undefined
  #pagesKept = true
  #generation = 0

  constructor(maxBytes: number) {
    this.#entries =
      maxBytes === 0
        ? undefined
        : new LRUCache({
            maxSize: maxBytes,
            // Bytes, not characters: a long page is UTF-8 bytes (3 per CJK letter), and a string's UTF-8
            // length is at least what V8 keeps of it (1 or 2 bytes per unit).
            sizeCalculation: (entry) => Buffer.byteLength(entry.body) + ENTRY_OVERHEAD_BYTES,
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

  /** Changes at each `forgetAll`: a page read from the store before one is not kept (`setPage`). */
  get generation(): number {
    return this.#generation
  }

  /** Keeps a full list page read in `generation`, unless a copy has begun or ended since, or is under way. */
  setPage(key: string, page: Representation, generation: number): void {
    if (this.#pagesKept && generation === this.#generation) this.set(key, page)
  }

  /** A copy into the store began or ended: every answer kept is let go, and pages kept once none is under way. */
  forgetAll(copyUnderWay: boolean): void {
    this.#generation++
    this.#pagesKept = !copyUnderWay
    this.#entries?.clear()
  }
}
