import type { Representation } from '../http/conditional-get.ts'

/**
 * Serialized GET answers that can never change, kept in memory (least recently used first out, bounded in
 * bytes). Pets are immutable and ids only grow, so a pet, and a list page that is full and followed by
 * more pets, are the same forever — on every instance, whoever adds pets meanwhile. Partial last pages and
 * 404s are never kept. (A database restored from an older backup under a running server is the one case
 * this does not cover: restart the service after a restore.)
 */
export class ReadCache {
  readonly #maxBytes: number
  readonly #entries = new Map<string, Representation>()
  #bytes = 0

  constructor(maxBytes: number) {
    this.#maxBytes = maxBytes
  }

  get(key: string): Representation | undefined {
    const entry = this.#entries.get(key)
    if (entry !== undefined) {
      // Re-inserting moves the entry to the young end of the Map's order.
      this.#entries.delete(key)
      this.#entries.set(key, entry)
    }
    return entry
  }

  set(key: string, entry: Representation): void {
    const size = entry.body.length + 200
    if (size > this.#maxBytes || this.#entries.has(key)) return
    this.#entries.set(key, entry)
    this.#bytes += size
    for (const [oldKey, old] of this.#entries) {
      if (this.#bytes <= this.#maxBytes) break
      this.#entries.delete(oldKey)
      this.#bytes -= old.body.length + 200
    }
  }
}
