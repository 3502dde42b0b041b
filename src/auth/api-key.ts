import { createHash, randomBytes } from 'node:crypto'
import { API_KEY_PREFIX } from '../schemas/api-key.ts'
import type { NewApiKey } from '../store/store.ts'

/** A new key: 32 random bytes in base64url, the 43 characters of a key's body (schemas/api-key.ts). */
export function generateApiKey(): string {
  return API_KEY_PREFIX + randomBytes(32).toString('base64url')
}

/**
 * Keys are random with 256 bits of entropy, so one SHA-256 is enough to make the stored hash useless to a
 * thief (no password-style stretching needed), and looking a key up by its hash leaks nothing through
 * timing: an attacker cannot choose the hash they probe with.
 */
export function hashApiKey(key: string): string {
  return createHash('sha256').update(key).digest('hex')
}

/** What `keys list` shows of a key: the prefix and four characters, enough to tell keys apart. */
function apiKeyHint(key: string): string {
  return `${key.slice(0, API_KEY_PREFIX.length + 4)}…`
}

/** What the store keeps of a key: its name, its hash and its hint — never the key. */
export function storedFormOf(name: string, key: string): NewApiKey {
  return { name, hash: hashApiKey(key), hint: apiKeyHint(key) }
}
