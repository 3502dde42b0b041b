import { LRUCache } from 'lru-cache'
import type { Representation } from './representation.ts'

/** What an entry is charged besides its body: the key, the ETag and the cache's own bookkeeping. */
const ENTRY_OVERHEAD_BYTES = 200

/**
 * Serialized GET answers that never change (a pet, a full list page followed by more pets), in memory,
 * bounded in bytes, none kept while a copy is under way (docs/decisions.md, "Read cache: only answers that
 * never change"); on lru-cache, whose hits leave no old-space garbage ("Read cache on `lru-cache`").
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
