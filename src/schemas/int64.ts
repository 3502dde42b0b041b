import Type, { type TSchema } from 'typebox'

export const INT64_MIN = -(2n ** 63n)
export const INT64_MAX = 2n ** 63n - 1n

/** An integer literal as JSON and URLs write it: no sign on zero, no leading zeros, no fraction, no exponent. */
export const INTEGER_LITERAL = /^(?:0|-?[1-9][0-9]*)$/

export function isInt64(value: unknown): value is bigint {
  return typeof value === 'bigint' && value >= INT64_MIN && value <= INT64_MAX
}

/** How an integer must be written (INTEGER_LITERAL), said with every integer's rule: `01` is in range. */
export const LITERAL_FORM = 'written without a plus sign, leading zeros, a fraction or an exponent'

export const INT64_RULE = `must be an integer from -9223372036854775808 to 9223372036854775807, ${LITERAL_FORM}`

/**
 * An int64 as OpenAPI writes it. In the process it is always a `bigint`: JavaScript numbers round above
 * 2^53, so the request decoders turn integer literals into bigint and the validator checks int64 nodes
 * with `isInt64` (see `http/validator-compiler.ts`); fast-json-stringify writes bigint digits exactly.
 */
export function Int64({ description }: { description?: string } = {}) {
  // JSON Schema's integer takes `1.0` and `-0`; the decoders take only the literal (INTEGER_LITERAL).
  const literal = 'An integer literal: `1.0`, `1e2`, `-0` and `01` are not int64 values here.'
  return Type.Unsafe<bigint>({
    type: 'integer',
    format: 'int64',
    description: description === undefined ? literal : `${description} ${literal}`,
  })
}

export function isInt64Schema(schema: TSchema): boolean {
  return (schema as { format?: unknown }).format === 'int64'
}
