import { ApiError } from '../errors.ts'
import { type JsonTextFacts, scanJsonText } from './json-text-scan.ts'

// JSON.parse has already checked the number's syntax; without fraction or exponent it is an integer.
const FRACTION_OR_EXPONENT = /[.eE]/
// Keys that would reach an object's prototype if the body were ever merged or copied carelessly.
const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype'])

/** Objects and arrays one inside another a body may have: a pet is one; far more needs no reading. */
export const MAX_BODY_DEPTH = 64

const forbidden = (key: string) => new ApiError('invalid_body', `body field "${key}" is not allowed`)

interface ReviverContext {
  source?: string
}

/**
 * Every integer literal becomes a bigint from its source text (a number rounds above 2^53); `1.0`, `1e3` and
 * `-0` stay numbers, which the int64 check refuses (docs/decisions.md, "int64").
 */
function reviveExactly(this: unknown, key: string, value: unknown, context?: ReviverContext): unknown {
  if (FORBIDDEN_KEYS.has(key)) throw forbidden(key)
  const source = context?.source
  if (
    typeof value === 'number' &&
    source !== undefined &&
    source !== '-0' &&
    !FRACTION_OR_EXPONENT.test(source)
  ) {
    return BigInt(source)
  }
  return value
}

/**
 * What `reviveExactly` makes of a value whose numbers are all exact integers, without a call from the
 * parser per value: each number a bigint, each key checked after its value's own keys, in the reviver's
 * order, so the same key is named first. A forbidden key is refused before anything is set under it.
 */
function exactFromShortIntegers(value: unknown): unknown {
  // An integer the scan found short (never a fraction): its double, and so this bigint, is exact.
  if (typeof value === 'number') return BigInt(value)
  if (typeof value !== 'object' || value === null) return value
  if (Array.isArray(value)) {
    for (let at = 0; at < value.length; at++) {
      const item: unknown = value[at]
      const exact = exactFromShortIntegers(item)
      if (exact !== item) value[at] = exact
    }
    return value
  }
  const record = value as Record<string, unknown>
  for (const key of Object.keys(record)) {
    const field = record[key]
    const exact = exactFromShortIntegers(field)
    if (FORBIDDEN_KEYS.has(key)) throw forbidden(key)
    if (exact !== field) record[key] = exact
  }
  return record
}

/**
 * `text` parsed with integer literals as bigints, prototype keys and nesting past MAX_BODY_DEPTH refused
 * (ApiError), and the first key given twice in one object; throws as JSON.parse on text that is not JSON.
 * A reviver only when a double cannot hold some integer (docs/decisions.md, "A create's body parsed").
 */
export function parseExactly(
  text: string,
): { value: unknown } & Pick<JsonTextFacts, 'duplicateKey' | 'duplicateWithin'> {
  const parsed: unknown = JSON.parse(text)
  const { duplicateKey, duplicateWithin, shortIntegersOnly, depth } = scanJsonText(text)
  if (depth > MAX_BODY_DEPTH) {
    throw new ApiError(
      'malformed_json',
      `request body is nested too deeply: at most ${MAX_BODY_DEPTH} levels of objects and arrays`,
    )
  }
  const value = shortIntegersOnly
    ? exactFromShortIntegers(parsed)
    : JSON.parse(text, reviveExactly as (key: string, value: unknown) => unknown)
  return { value, duplicateKey, duplicateWithin }
}
