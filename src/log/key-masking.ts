import { API_KEY_BODY, API_KEY_PREFIX } from '../schemas/api-key.ts'

// A key anywhere in a text, each of its characters as itself or percent-encoded, once or more (`%5F`,
// `%255F`, any case): that is how a key sent in a URL reaches a log line, decoded or not. The body admits
// any encoded byte, so a near-key is masked too rather than a real one missed.
const encoded = (hex: string) => `%(?:25)*${hex}`
// A hex code matching in either case: `6b` becomes `6[Bb]`.
const anyCase = (hex: string) => hex.replace(/[a-f]/g, (digit) => `[${digit.toUpperCase()}${digit}]`)
// The prefix is letters and `_`: each stands for itself in a pattern, or for its encoded code.
const prefixCharacter = (character: string) =>
  `(?:${character}|${encoded(anyCase(character.charCodeAt(0).toString(16)))})`
const API_KEY_ANYWHERE = new RegExp(
  [...API_KEY_PREFIX].map(prefixCharacter).join('') +
    `(?:[${API_KEY_BODY.alphabet}]|${encoded('[0-9A-Fa-f]{2}')}){${API_KEY_BODY.length}}`,
  'g',
)
const MASKED = `${API_KEY_PREFIX}[redacted]`
// No text shorter than a plain key can hold one (an encoded key is longer still).
const SHORTEST_KEY = API_KEY_PREFIX.length + API_KEY_BODY.length

/**
 * The text with anything shaped like a key replaced, in plain or percent-encoded form: every log line goes
 * through it (log/logger.ts, and the request line's fields, http/request-line.ts). Text shorter than a key,
 * or with neither the prefix nor a `%`, is returned as it is, at once.
 */
export function maskApiKeys(text: string): string {
  if (text.length < SHORTEST_KEY || (!text.includes(API_KEY_PREFIX) && !text.includes('%'))) return text
  return text.replace(API_KEY_ANYWHERE, MASKED)
}

/** Whether the text holds anything shaped like a key (see maskApiKeys). */
export function containsApiKey(text: string): boolean {
  return maskApiKeys(text) !== text
}
