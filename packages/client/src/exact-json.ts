import type { components } from './openapi-types.ts'

type Pet = components['schemas']['Pet']
type BigintKeys<T> = { [K in keyof T]-?: NonNullable<T[K]> extends bigint ? K : never }[keyof T]

// The int64 properties of the response bodies. Typed as a record of exactly Pet's bigint keys, so a new
// int64 field in the document fails the type check here (after `npm run client:generate`) instead of
// arriving as a rounded number.
const INT64_KEYS: Record<BigintKeys<Pet>, true> = { id: true, categoryId: true }

/** JSON as ES2025 engines have it; TypeScript's lib does not declare rawJSON or the reviver's context yet. */
interface JsonWithSource {
  rawJSON?: (text: string) => unknown
  parse(
    text: string,
    reviver: (key: string, value: unknown, context?: { source?: string }) => unknown,
  ): unknown
}
const json = JSON as unknown as JsonWithSource

export const UNSUPPORTED_ENGINE =
  '@petstore/client cannot run on this JavaScript engine: it needs JSON.rawJSON and the source text in ' +
  "JSON.parse's reviver, to keep int64 values exact, and AbortSignal.any (Node.js 22 or newer, Chrome 116, " +
  'Firefox 135, Safari 18.4).'

/**
 * Whether this engine reads and writes JSON integers digit for digit. Without both features an int64
 * above 2^53 would be rounded silently, in either direction.
 */
export function hasExactJson(): boolean {
  let source: string | undefined
  json.parse('9007199254740993', (_key, value, context) => {
    source = context?.source
    return value
  })
  return typeof json.rawJSON === 'function' && source === '9007199254740993'
}

/**
 * Parses a response body with every int64 property as an exact bigint. JSON.parse alone would round ids
 * above 2^53; its reviver receives the literal's source text (`context.source`), which BigInt reads exactly.
 * A field this version does not know (a later minor version's) is kept exactly too: a number, or a bigint
 * when it is an integer a number cannot hold (past 2^53, within int64).
 */
export function parseExactJson(text: string): unknown {
  return json.parse(text, (key, value, context) => {
    if (typeof value !== 'number') return value
    if (!Object.hasOwn(INT64_KEYS, key) && (Number.isSafeInteger(value) || !Number.isInteger(value))) {
      return value
    }
    const source = context?.source
    if (source === undefined) throw new TypeError(UNSUPPORTED_ENGINE)
    // Past int64 (a hostile answer's million digits), left a number: no pet then, and no long parse. Not
    // an integer (`1.5`, `1e3`): left a number too, no pet if it is a pet's, kept in a field not known.
    if (source.length > INT64_MAX_DIGITS || !INTEGER.test(source)) return value
    const exact = BigInt(source)
    return exact >= INT64_MIN && exact <= INT64_MAX ? exact : value
  })
}

const INT64_MIN = -(2n ** 63n)
const INT64_MAX = 2n ** 63n - 1n
// "-9223372036854775808": the longest literal an int64 can be.
const INT64_MAX_DIGITS = 20
const INTEGER = /^-?[0-9]+$/

/**
 * Writes a request body with each bigint as a plain JSON integer, digit for digit. The value is read from
 * its holder, not as given: a `BigInt.prototype.toJSON` some library installed has already turned it into
 * a string or a rounded number there.
 */
export function stringifyExactJson(body: unknown): string {
  const rawJson = json.rawJSON
  if (rawJson === undefined) throw new TypeError(UNSUPPORTED_ENGINE)
  return JSON.stringify(body, function (this: Record<string, unknown>, key: string, value: unknown) {
    const original = this[key]
    return typeof original === 'bigint' ? rawJson(String(original)) : value
  })
}
