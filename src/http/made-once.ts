// How many values of a fixed set are kept: far more than the methods, operations and key names there are.
const KEPT = 1000

/**
 * Values made once per key of a small fixed set (methods, operations, key names), the first KEPT kept;
 * the last one is found again without a lookup, as consecutive requests mostly repeat it.
 */
export class Made<K, V> {
  readonly #make: (key: K) => V
  readonly #kept = new Map<K, V>()
  #lastKey: K | undefined
  #last: V | undefined

  constructor(make: (key: K) => V) {
    this.#make = make
  }

  of(key: K): V {
    if (key === this.#lastKey && this.#last !== undefined) return this.#last
    let value = this.#kept.get(key)
    if (value === undefined) {
      value = this.#make(key)
      if (this.#kept.size < KEPT) this.#kept.set(key, value)
    }
    this.#lastKey = key
    this.#last = value
    return value
  }
}
