import { isWellFormedApiKey } from '../schemas/api-key.ts'
import type { KeyIdentity, Store } from '../store/store.ts'
import { hashApiKey } from './api-key.ts'

export interface AuthenticatorOptions {
  store: Pick<Store, 'findActiveApiKey'>
  /** How long a lookup result is reused; a revoked key stops working within this time. 0 disables. */
  cacheTtlMs: number
  cacheMaxEntries: number
  /** Milliseconds on a clock that only moves forward (the wall clock may step back or forth). */
  now?: () => number
}

/** Synchronous when the answer is cached (nearly every request), so a hit costs no promise. */
export type Authenticate = (key: string) => KeyIdentity | undefined | Promise<KeyIdentity | undefined>

/**
 * Resolves a presented key to the key's identity, or undefined when it is malformed, unknown or revoked.
 * Results (unknown keys included, so the same unknown key asked again does not reach the store) are
 * cached for `cacheTtlMs`, known and unknown keys in two maps, each bounded to `cacheMaxEntries` and
 * dropping its oldest entries first: a flood of random keys pushes out only other unknown ones.
 */
export function createAuthenticator({
  store,
  cacheTtlMs,
  cacheMaxEntries,
  now = () => performance.now(),
}: AuthenticatorOptions): Authenticate {
  const known = new Map<string, { identity: KeyIdentity; expiresAt: number }>()
  const unknown = new Map<string, { identity: undefined; expiresAt: number }>()

  async function lookUp(key: string): Promise<KeyIdentity | undefined> {
    const identity = await store.findActiveApiKey(hashApiKey(key))
    if (cacheTtlMs > 0) {
      // A key revoked since it was cached moves from one map to the other.
      known.delete(key)
      unknown.delete(key)
      const expiresAt = now() + cacheTtlMs
      if (identity === undefined) remember(unknown, key, { identity, expiresAt })
      else remember(known, key, { identity, expiresAt })
    }
    return identity
  }

  function remember<V>(cache: Map<string, V>, key: string, value: V): void {
    if (cache.size >= cacheMaxEntries) cache.delete(cache.keys().next().value as string)
    cache.set(key, value)
  }

  // Keyed by the presented key itself, so a hit costs no hashing: the key is in this process's memory for
  // the request anyway, and it never leaves it (only its hash reaches the store).
  return (key) => {
    const cached = known.get(key) ?? unknown.get(key)
    if (cached !== undefined && cached.expiresAt > now()) return cached.identity
    if (!isWellFormedApiKey(key)) return undefined
    return lookUp(key)
  }
}
