import { createHash, randomBytes } from 'node:crypto'
import type { NewApiKey } from '../store/store.ts'

/** Every key starts with this, so a leaked key is recognisable by secret scanners and by people. */
export const API_KEY_PREFIX = 'psk_'
// 32 random bytes in base64url: 43 characters, 256 bits of entropy.
const API_KEY_PATTERN = /^psk_[A-Za-z0-9_-]{43}$/
// A key anywhere in a text, each of its characters as itself or percent-encoded, once or more (`%5F`,
// `%255F`, any case): that is how a key sent in a URL reaches a log line, decoded or not. The body admits
// any encoded byte, so a near-key is masked too rather than a real one missed.
const encoded = (hex: string) => `%(?:25)*${hex}`
const API_KEY_ANYWHERE = new RegExp(
  `(?:p|${encoded('70')})(?:s|${encoded('73')})(?:k|${encoded('6[Bb]')})(?:_|${encoded('5[Ff]')})` +
    `(?:[A-Za-z0-9_-]|${encoded('[0-9A-Fa-f]{2}')}){43}`,
  'g',
)
export const KEY_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/

export function generateApiKey(): string {
  return API_KEY_PREFIX + randomBytes(32).toString('base64url')
}

export function isWellFormedApiKey(key: string): boolean {
  return API_KEY_PATTERN.test(key)
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
export function apiKeyHint(key: string): string {
  return `${key.slice(0, API_KEY_PREFIX.length + 4)}…`
}

/** What the store keeps of a key: its name, its hash and its hint — never the key. */
export function storedFormOf(name: string, key: string): NewApiKey {
  return { name, hash: hashApiKey(key), hint: apiKeyHint(key) }
}

/**
 * The text with anything shaped like a key replaced, in plain or percent-encoded form: every log line goes
 * through it (src/logger.ts). Text with neither the prefix nor a `%` is returned as it is, at once.
 */
export function maskApiKeys(text: string): string {
  if (!text.includes('psk') && !text.includes('%')) return text
  return text.replace(API_KEY_ANYWHERE, `${API_KEY_PREFIX}[redacted]`)
}

/** Whether the text holds anything shaped like a key (see maskApiKeys). */
export function containsApiKey(text: string): boolean {
  return maskApiKeys(text) !== text
}
