import { INTEGER_LITERAL } from './int64.ts'

// `-9223372036854775808`: 20 characters.
const INT64_LITERAL_MAX = 20

interface ScalarSchema {
  type?: string
  format?: string
}

/**
 * Turns a string from a URL or the environment into the value its schema describes, without guessing:
 * only a canonical integer literal becomes a number (or a bigint for int64); no setting or parameter is
 * a boolean. Anything else is returned unchanged, so the schema check refuses it naming the rule.
 */
export function decodeString(schema: ScalarSchema, raw: string): unknown {
  if (schema.type === 'integer' && INTEGER_LITERAL.test(raw)) {
    // No int64 is written longer: a path's thousands of digits are refused without being made a bigint.
    if (schema.format === 'int64') return raw.length > INT64_LITERAL_MAX ? raw : BigInt(raw)
    return Number(raw)
  }
  return raw
}
