import type { DeprecatedCallCount, KeyIdentity, Store } from '../store/store.ts'

/** A key's count, with its name to say whose calls a failed write leaves out. */
type KeyCount = DeprecatedCallCount & { keyName: string }

/**
 * Counts calls of deprecated operations per API key in memory and adds them to the store in one write
 * every few seconds, so the deprecated operation costs no database write per call. `keys list` shows the
 * totals, so operators can see who still depends on an operation before it is removed.
 */
export class DeprecatedCallCounter {
  readonly #store: Pick<Store, 'recordDeprecatedCalls'>
  readonly #now: () => number
  readonly #onCall: (key: KeyIdentity) => void
  #pending = new Map<bigint, KeyCount>()

  /** `onCall` hears of every call as it is counted (for metrics). */
  constructor(
    store: Pick<Store, 'recordDeprecatedCalls'>,
    now: () => number,
    onCall: (key: KeyIdentity) => void,
  ) {
    this.#store = store
    this.#now = now
    this.#onCall = onCall
  }

  count(key: KeyIdentity): void {
    this.#onCall(key)
    const apiKeyId = key.id
    const count = this.#pending.get(apiKeyId)
    if (count === undefined) {
      this.#pending.set(apiKeyId, { apiKeyId, keyName: key.name, calls: 1, lastCallAtMs: this.#now() })
    } else {
      count.calls++
      count.lastCallAtMs = this.#now()
    }
  }

  /** Writes what was counted since the last flush; on failure it is kept and counted into the next one. */
  async flush(): Promise<void> {
    if (this.#pending.size === 0) return
    const counts = [...this.#pending.values()]
    this.#pending = new Map()
    try {
      await this.#store.recordDeprecatedCalls(counts)
    } catch (error) {
      for (const count of counts) {
        const newer = this.#pending.get(count.apiKeyId)
        this.#pending.set(count.apiKeyId, {
          apiKeyId: count.apiKeyId,
          keyName: count.keyName,
          calls: count.calls + (newer?.calls ?? 0),
          lastCallAtMs: Math.max(count.lastCallAtMs, newer?.lastCallAtMs ?? 0),
        })
      }
      throw error
    }
  }

  /** What is counted and not yet written (after a failed flush, what it failed to write too), by key name. */
  unwritten(): Array<{ key: string; calls: number; lastCallAt: string }> {
    return [...this.#pending.values()].map((count) => ({
      key: count.keyName,
      calls: count.calls,
      lastCallAt: new Date(count.lastCallAtMs).toISOString(),
    }))
  }
}
