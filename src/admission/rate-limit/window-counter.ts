/** Requests counted in a key's current window, and the time left until that window ends. */
export interface WindowCount {
  count: number
  resetInMs: number
}

/**
 * Where rate-limit counts are kept: one fixed window per key, started by the key's first request and
 * ended `windowMs` later. In memory (this instance alone) or in Redis (every instance together).
 */
export interface WindowCounter {
  /** Counts one request for `key`; the in-memory counter answers at once, Redis with a promise. */
  increment(key: string, windowMs: number): WindowCount | Promise<WindowCount>
}
