/**
 * The form of an API key and of a key's name, written once: keys are made (auth/), checked (auth/, the
 * API_KEYS setting) and masked in every log line (log/) from these.
 */

/** Every key starts with this, so a leaked key is recognisable by secret scanners and by people. */
export const API_KEY_PREFIX = 'psk_'
/** What follows the prefix: 32 random bytes in base64url, 43 characters, 256 bits of entropy. */
export const API_KEY_BODY = { alphabet: 'A-Za-z0-9_-', length: 43 } as const

const API_KEY_PATTERN = new RegExp(`^${API_KEY_PREFIX}[${API_KEY_BODY.alphabet}]{${API_KEY_BODY.length}}$`)

export const KEY_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/
/** KEY_NAME_PATTERN in words, for messages. */
export const KEY_NAME_RULE = '1 to 64 letters, digits, ".", "_" or "-" starting with a letter or digit'

export function isWellFormedApiKey(key: string): boolean {
  return API_KEY_PATTERN.test(key)
}
