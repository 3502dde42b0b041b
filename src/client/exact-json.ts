import type { components } from './openapi-types.ts'

type Pet = components['schemas']['Pet']
type BigintKeys<T> = { [K in keyof T]-?: NonNullable<T[K]> extends bigint ? K : never }[keyof T]

// The int64 properties of the response bodies. Typed as a record of exactly Pet's bigint keys, so a new
// int64 field in the document fails the type check here (after `npm run client:generate`) instead of
// arriving as a rounded number.
const INT64_KEYS: Record<BigintKeys<Pet>, true> = { id: true, categoryId: true }

/** JSON.rawJSON is in Node 24 (and every current engine); TypeScript's lib does not declare it yet. */
const rawJson = (JSON as unknown as { rawJSON(text: string): unknown }).rawJSON

/**
 * Parses a response body with every int64 property as an exact bigint. JSON.parse alone would round ids
 * above 2^53; its reviver receives the literal's source text (`context.source`), which BigInt reads exactly.
 */
export function parseExactJson(text: string): unknown {
  return JSON.parse(text, (key: string, value: unknown, context?: { source?: string }) => {
    if (typeof value !== 'number' || !Object.hasOwn(INT64_KEYS, key)) return value
    if (context?.source === undefined) {
      throw new Error('petstore client: this JavaScript engine cannot read JSON integers exactly')
    }
    return BigInt(context.source)
  })
}

/** Writes a request body with each bigint as a plain JSON integer, digit for digit. */
export function stringifyExactJson(body: unknown): string {
  return JSON.stringify(body, (_key, value) => (typeof value === 'bigint' ? rawJson(String(value)) : value))
}
