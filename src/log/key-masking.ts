import { API_KEY_BODY, API_KEY_PREFIX } from '../schemas/api-key.ts'

// A key anywhere in a text, each of its characters as itself or percent-encoded, once or more (`%5F`,
// `%255F`, any case): that is how a key sent in a URL reaches a log line, decoded or not. The body admits
// any encoded byte, so a near-key is masked too rather than a real one missed.
const encoded = (hex: string) => `%(?:25)*${hex}`
// A hex code matching in either case: `6b` becomes `6[Bb]`.
const anyCase = (hex: string) => hex.replace(/[a-f]/g, (digit) => `[${digit.toUpperCase()}${digit}]`)
// The prefix is letters and `_`: each stands for itself in either case, or for its encoded code.
const prefixCharacter = (character: string) =>
  `(?:[${character.toUpperCase()}${character}]|${encoded(anyCase(character.charCodeAt(0).toString(16)))})`
// One character of the body, read once: a lookahead is never entered again, so `%2525` is taken as the
// longest code it can be (as a key's character encoded twice is) and never tried as `%25` then `2`, `5`.
// Tried every way, 14 such runs after a prefix made each 16 KB text cost 0.1 to 0.2 s (docs/decisions.md).
const bodyCharacter = `(?:(?=([${API_KEY_BODY.alphabet}]|${encoded('[0-9A-Fa-f]{2}')}))\\1)`
const prefix = [...API_KEY_PREFIX].map(prefixCharacter).join('')
const API_KEY_ANYWHERE = new RegExp(`${prefix}${bodyCharacter}{${API_KEY_BODY.length}}`, 'g')
const MASKED = `${API_KEY_PREFIX}[redacted]`
// A character no letter's case changes, which every key written plain holds.
const PREFIX_END = API_KEY_PREFIX.slice(-1)
// No text shorter than a plain key can hold one (an encoded key is longer still).
const SHORTEST_KEY = API_KEY_PREFIX.length + API_KEY_BODY.length

/**
 * The text with anything shaped like a key, plain or percent-encoded, replaced; every log line goes through
 * it. Text shorter than a key or with neither `_` nor `%` is returned at once (docs/decisions.md, "Keys are
 * masked on the way out").
 */
export function maskApiKeys(text: string): string {
  if (text.length < SHORTEST_KEY || (!text.includes(PREFIX_END) && !text.includes('%'))) return text
  return text.replace(API_KEY_ANYWHERE, MASKED)
}

// What is left of a key a message's bound cut (its end marked `…`, errors.ts): maskApiKeys takes whole keys.
const CUT_KEY = new RegExp(`${API_KEY_PREFIX}[${API_KEY_BODY.alphabet}]{0,${API_KEY_BODY.length - 1}}…`, 'g')

/** The text with the start of a key that a message's bound cut short (its end marked `…`) masked. */
export function maskCutApiKeys(text: string): string {
  return text.includes('…') ? text.replace(CUT_KEY, `${MASKED}…`) : text
}

// The start of a key at a text's very end, as a cut left it (or all of it): its prefix, then its first
// characters, the last one read perhaps half of its code.
const KEY_START_AT_END = new RegExp(
  `${prefix}${bodyCharacter}{0,${API_KEY_BODY.length}}(?:%(?:25)*[0-9A-Fa-f]?)?$`,
)

/** The text with the start of a key that ends it masked: what is left of a key where a text was cut. */
export function maskKeyStartAtEnd(text: string): string {
  return text.replace(KEY_START_AT_END, MASKED)
}

/** Whether the text holds anything shaped like a key (see maskApiKeys). */
export function containsApiKey(text: string): boolean {
  return maskApiKeys(text) !== text
}
