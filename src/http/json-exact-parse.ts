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
 * Keeps integers exact: JSON.parse gives the reviver each number's source text, and every integer literal
 * becomes a bigint (a JS number would round above 2^53). Numbers written with a fraction or an exponent
 * stay numbers, which the int64 check then refuses — `1.0` is not silently taken for `1`; nor is `-0`
 * taken for `0`.
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
 * `text` parsed with every integer literal a bigint and the keys that could reach a prototype refused
 * (ApiError), and the first key it gives twice in one object (with the top-level field holding it).
 * Throws as JSON.parse does on text that is not JSON, and refuses (ApiError) a value nested deeper than
 * MAX_BODY_DEPTH before reading it further: a limit of its own, not whatever depth the reviver's stack
 * allows. A body whose integers a double holds
 * exactly, as nearly all are, is parsed without a reviver: a call from the parser per value cost more
 * than the whole rest of the parse (docs/decisions.md, "Per-request cost").
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
