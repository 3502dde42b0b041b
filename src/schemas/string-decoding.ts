import { INTEGER_LITERAL } from './int64.ts'

interface ScalarSchema {
  type?: string
  format?: string
}

/**
 * Turns a string from a URL or the environment into the value its schema describes, without guessing:
 * only a canonical integer literal becomes a number (or a bigint for int64), only `true`/`false` a boolean.
 * Anything else is returned unchanged, so the schema check refuses it with a message naming the rule.
 */
export function decodeString(schema: ScalarSchema, raw: string): unknown {
  if (schema.type === 'integer' && INTEGER_LITERAL.test(raw)) {
    return schema.format === 'int64' ? BigInt(raw) : Number(raw)
  }
  if (schema.type === 'boolean' && (raw === 'true' || raw === 'false')) return raw === 'true'
  return raw
}
