import { INT64_MAX, INT64_MIN } from '../../schemas/int64.ts'

// Node 24 has JSON.rawJSON; TypeScript's lib does not declare it yet.
const rawJson = (JSON as unknown as { rawJSON(text: string): object }).rawJSON

/**
 * An integer that JSON.stringify writes exactly (its toJSON gives a raw JSON number) and so does the
 * `yaml` package (it unwraps boxed values): a bigint would make JSON.stringify throw, and a number rounds
 * above 2^53, so the document's int64 bounds would read 9223372036854775808.
 */
function exactInteger(value: bigint): object {
  return Object.assign(Object(value), { toJSON: () => rawJson(String(value)) })
}

/**
 * Gives every int64 schema of the OpenAPI document its bounds, the whole int64 range, written exactly.
 * They are added here rather than in the schemas: the validator checks int64 with `isInt64`, and the
 * serializer's schema check takes only JavaScript numbers as bounds.
 */
export function boundInt64Schemas(node: unknown): void {
  if (node === null || typeof node !== 'object') return
  if (Array.isArray(node)) {
    for (const item of node) boundInt64Schemas(item)
    return
  }
  const schema = node as Record<string, unknown>
  if (schema.type === 'integer' && schema.format === 'int64') {
    schema.minimum = exactInteger(INT64_MIN)
    schema.maximum = exactInteger(INT64_MAX)
  }
  for (const value of Object.values(schema)) boundInt64Schemas(value)
}
