import { LRUCache } from 'lru-cache'
import type { WindowCount, WindowCounter } from './window-counter.ts'

interface Window {
  count: number
  startedAt: number
}

/**
 * Counts in this process. Keys are authenticated API keys, so there are few; the bound only stops an
 * unexpected number of them from growing memory without end (a dropped key starts a new window).
 */
export class MemoryWindowCounter implements WindowCounter {
  readonly #windows: LRUCache<string, Window>
  readonly #now: () => number

  /** `now`: milliseconds on a clock that only moves forward, unlike the wall clock (docs/decisions.md). */
  constructor(maxKeys: number, now: () => number = () => performance.now()) {
    this.#windows = new LRUCache({ max: maxKeys })
    this.#now = now
  }

  increment(key: string, windowMs: number): WindowCount {
    const now = this.#now()
    let window = this.#windows.get(key)
    if (window === undefined) {
      window = { count: 0, startedAt: now }
      this.#windows.set(key, window)
    } else if (now - window.startedAt >= windowMs) {
      window.count = 0
      window.startedAt = now
    }
    window.count++
    // What is left of the window, from the time elapsed: never more than the window, as `startedAt +
    // windowMs - now` can be by a rounding (60000.00000000001 ms, a reset of 61 s).
    return { count: window.count, resetInMs: windowMs - (now - window.startedAt) }
  }
}
