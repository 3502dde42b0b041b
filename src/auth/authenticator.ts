import { LRUCache } from 'lru-cache'
import { StoreUnavailableError } from '../errors.ts'
import { isWellFormedApiKey } from '../schemas/api-key.ts'
import type { KeyIdentity, Store } from '../store/store.ts'
import { hashApiKey } from './api-key.ts'

export interface AuthenticatorOptions {
  store: Pick<Store, 'findActiveApiKeys'>
  /** How long a lookup result is reused; a revoked key stops working within this time. 0 disables. */
  cacheTtlMs: number
  cacheMaxEntries: number
  /** Longest a key waits for its lookup to start (LOOKUP_QUEUE_MS by default); past it, unavailable. */
  lookupQueueMs?: number
}

/** Synchronous when the answer is cached (nearly every request), so a hit costs no promise. */
export type Authenticate = (key: string) => KeyIdentity | undefined | Promise<KeyIdentity | undefined>

/**
 * Resolves a presented key to the key's identity, or undefined when it is malformed, unknown or revoked.
 * Results are cached for `cacheTtlMs`, known and unknown keys apart, each LRU-bounded to `cacheMaxEntries`,
 * so random keys push out only other unknown ones (docs/decisions.md, "API keys").
 */
export function createAuthenticator({
  store,
  cacheTtlMs,
  cacheMaxEntries,
  lookupQueueMs = LOOKUP_QUEUE_MS,
}: AuthenticatorOptions): Authenticate {
  const findHash = oneQueryAtATime((hashes) => store.findActiveApiKeys(hashes), lookupQueueMs)
  const lookUpUncached = (key: string) => findHash(hashApiKey(key))
  if (cacheTtlMs === 0) return (key) => (isWellFormedApiKey(key) ? lookUpUncached(key) : undefined)
  // On the monotonic clock, read at most once a millisecond (lru-cache's ttlResolution), not per request.
  const options = { max: cacheMaxEntries, ttl: cacheTtlMs }
  const known = new LRUCache<string, KeyIdentity>(options)
  const unknown = new LRUCache<string, true>(options)
  // Lookups under way: the requests a busy key brings once its entry expires wait on one, rather than each
  // asking the store (on PostgreSQL, as many queries as requests in flight, every cacheTtlMs).
  const pending = new Map<string, Promise<KeyIdentity | undefined>>()

  async function lookUp(key: string): Promise<KeyIdentity | undefined> {
    const identity = await lookUpUncached(key)
    // A key revoked since it was cached moves from one cache to the other.
    known.delete(key)
    unknown.delete(key)
    if (identity === undefined) unknown.set(key, true)
    else known.set(key, identity)
    return identity
  }

  // Keyed by the presented key itself, so a hit costs no hashing: the key is in this process's memory for
  // the request anyway, and it never leaves it (only its hash reaches the store).
  return (key) => {
    const identity = known.get(key)
    if (identity !== undefined) return identity
    if (unknown.get(key) === true || !isWellFormedApiKey(key)) return undefined
    let lookup = pending.get(key)
    if (lookup === undefined) {
      lookup = lookUp(key).finally(() => pending.delete(key))
      pending.set(key, lookup)
    }
    return lookup
  }
}

// The most hashes one lookup asks for: a query's text and its plan stay small (an index probe each).
const MOST_HASHES_PER_QUERY = 256
// As a call waits for a database connection (PG_CONNECT_TIMEOUT_MS's default): keys coming faster than
// lookups answer them (a flood against a slow database) are refused 503 past it, not queued without end.
const LOOKUP_QUEUE_MS = 2000

/**
 * Key lookups one query at a time: hashes asked for while one runs go together in the next, so a flood of
 * unknown keys holds one database connection, not the pool (docs/decisions.md, "Unknown keys").
 */
function oneQueryAtATime(
  find: (hashes: string[]) => Promise<(KeyIdentity | undefined)[]>,
  queueMs: number,
): (hash: string) => Promise<KeyIdentity | undefined> {
  type Waiting = {
    hash: string
    since: number
    resolve: (found: KeyIdentity | undefined) => void
    reject: (error: unknown) => void
  }
  let waiting: Waiting[] = []
  let running = false
  async function drain(): Promise<void> {
    running = true
    while (waiting.length > 0) {
      // In the order they came: those waiting too long are at the front.
      const now = performance.now()
      const fresh = waiting.findIndex(({ since }) => now - since <= queueMs)
      const expired = waiting.splice(0, fresh === -1 ? waiting.length : fresh)
      if (expired.length > 0) {
        const late = new StoreUnavailableError(`key lookups waited more than ${queueMs} ms for their turn`)
        for (const { reject } of expired) reject(late)
      }
      const batch = waiting.splice(0, MOST_HASHES_PER_QUERY)
      if (batch.length === 0) break
      try {
        const found = await find(batch.map(({ hash }) => hash))
        for (const [index, { resolve }] of batch.entries()) resolve(found[index])
      } catch (error) {
        const failed = [...batch, ...waiting]
        waiting = []
        for (const { reject } of failed) reject(error)
      }
    }
    running = false
  }
  return (hash) =>
    new Promise((resolve, reject) => {
      waiting.push({ hash, since: performance.now(), resolve, reject })
      if (!running) void drain()
    })
}
