import type { FastifySchemaCompiler } from 'fastify'
import Type, { type TSchema } from 'typebox'
import type { TLocalizedValidationError } from 'typebox/error'
import { Compile } from 'typebox/schema'
import { ApiError, type ErrorCode } from '../errors.ts'
import { INT64_RULE, isInt64, isInt64Schema } from '../schemas/int64.ts'
import { brokenRule, type SchemaNode } from '../schemas/schema-rules.ts'
import { decodeString } from '../schemas/string-decoding.ts'
import { echoed } from './echoed-text.ts'
import { isSharedQuery } from './query-memo.ts'

type Part = 'body' | 'querystring' | 'params' | 'headers'

const PART: Record<Part, { code: ErrorCode; field: string; whole: string }> = {
  body: { code: 'invalid_body', field: 'body field', whole: 'request body' },
  querystring: { code: 'invalid_query', field: 'query parameter', whole: 'query string' },
  params: { code: 'invalid_path_parameter', field: 'path parameter', whole: 'path' },
  headers: { code: 'bad_request', field: 'header', whole: 'headers' },
}

/** The code of a refused part: its part's, or that of the refused field when it has one (`withRefusalCode`). */
function codeOf(part: Part, schema: SchemaNode, errors: TLocalizedValidationError[]): ErrorCode {
  const name = errors.find((e) => e.instancePath !== '')?.instancePath.split('/')[1]
  const field = name === undefined ? undefined : schema.properties?.[name]
  return field?.refusalCode ?? PART[part].code
}

/**
 * Copies a schema for checking, with every int64 node checked by `isInt64`: JSON Schema's `integer` knows
 * only JS numbers, and int64 values reach the validator as bigint. Property descriptors are copied so
 * TypeBox refinements (non-enumerable) survive.
 */
function forChecking(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(forChecking)
  if (schema === null || typeof schema !== 'object') return schema
  if (isInt64Schema(schema as TSchema)) return Type.Refine(Type.Unknown(), isInt64, () => INT64_RULE)
  const copy = Object.create(Object.getPrototypeOf(schema), Object.getOwnPropertyDescriptors(schema))
  for (const [key, value] of Object.entries(schema)) copy[key] = forChecking(value)
  return copy
}

/** The message refusing a field the part's schema does not list. */
function notAllowed(part: Part, name: string, properties: Record<string, unknown>): string {
  return `${PART[part].field} ${echoed(name)} is not allowed (allowed: ${Object.keys(properties).join(', ') || 'none'})`
}

function describe(
  part: Part,
  schema: SchemaNode,
  value: unknown,
  errors: TLocalizedValidationError[],
  shared: ReadonlyMap<string, SchemaNode>,
): string {
  const where = PART[part]
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    return `${where.whole} must be a JSON object`
  const properties = schema.properties ?? {}
  // Unknown fields are found directly: TypeBox lists only the first few errors of a large input.
  const closed = schema.additionalProperties === false
  const unknown = closed ? Object.keys(value).find((name) => !Object.hasOwn(properties, name)) : undefined
  if (unknown !== undefined) return notAllowed(part, unknown, properties)
  const missing = errors.find((e) => e.keyword === 'required')
  if (missing?.keyword === 'required')
    return `${where.field} "${missing.params.requiredProperties[0]}" is required`
  const error = errors.find((e) => e.instancePath !== '')
  const name = error?.instancePath.split('/')[1]
  if (error === undefined || name === undefined) return `${where.whole} is not valid`
  const property = properties[name]
  // A field may be a reference to a shared schema (status → PetStatus): its rule is the referenced one's.
  const rule = property?.$ref === undefined ? property : (shared.get(property.$ref) ?? property)
  return `${where.field} "${name}" ${brokenRule(error, rule)}`
}

/**
 * URL parts arrive as strings. Integers are decoded strictly (no `0x10`, `1e1`, ` 5` or `2.5`), a
 * parameter given twice is refused rather than one of its values picked, and so is one a closed schema
 * does not list.
 */
function decodeParameters(part: Part, schema: SchemaNode, input: Record<string, unknown>): ApiError | object {
  const properties = schema.properties ?? {}
  const closed = schema.additionalProperties === false
  let unknown: string | undefined
  // No prototype: a parameter named `__proto__` stays a parameter (and is refused as unknown).
  const decoded: Record<string, unknown> = Object.create(null)
  for (const name of Object.keys(input)) {
    const raw = input[name]
    const property = Object.hasOwn(properties, name) ? properties[name] : undefined
    if (property === undefined) {
      if (closed) unknown ??= name
      else decoded[name] = raw
      continue
    }
    if (typeof raw !== 'string')
      return new ApiError(PART[part].code, `${PART[part].field} "${name}" must be given once`)
    decoded[name] = decodeString(property, raw)
  }
  // After the loop: a parameter given twice is named before an unknown one, wherever each stands.
  if (unknown !== undefined) return new ApiError(PART[part].code, notAllowed(part, unknown, properties))
  return decoded
}

/**
 * Validates every request part against its TypeBox schema (the same schema that documents it), and answers
 * with an ApiError whose message names the field and its rule. `shared` holds the schemas routes refer to
 * by `$id`.
 */
export function createValidatorCompiler(shared: readonly TSchema[]): FastifySchemaCompiler<TSchema> {
  const byId = new Map(shared.map((schema) => [(schema as SchemaNode).$id as string, schema as SchemaNode]))
  const context = Object.fromEntries([...byId].map(([id, schema]) => [id, forChecking(schema) as TSchema]))

  return ({ schema, httpPart }) => {
    const part = (httpPart ?? 'body') as Part
    const node = schema as SchemaNode
    const resolved = node.$ref === undefined ? node : (byId.get(node.$ref) ?? node)
    const checked = forChecking(schema) as SchemaNode
    // Names a closed schema does not list are refused while decoding URL parameters (none of ours has
    // patternProperties): the compiled check need not list the decoded object's own names on every request
    // (docs/decisions.md, "Per-request cost").
    if ((part === 'querystring' || part === 'params') && checked.additionalProperties === false)
      delete checked.additionalProperties
    const validator = Compile(context, checked as TSchema)
    const fail = (value: unknown) => {
      const [, errors] = validator.Errors(value)
      return {
        error: new ApiError(codeOf(part, resolved, errors), describe(part, resolved, value, errors, byId)),
      }
    }

    if (part === 'querystring' || part === 'params') {
      const check = (input: unknown) => {
        const value = decodeParameters(part, resolved, (input ?? {}) as Record<string, unknown>)
        if (value instanceof ApiError) return { error: value }
        return validator.Check(value) ? { value } : fail(value)
      }
      if (part === 'params') return check
      // A query the memo shares between requests is checked once; only a passing check is kept, as an
      // error is a new object for each answer (query-memo.ts).
      const passed = new WeakMap<object, { value: object }>()
      return (input: unknown) => {
        if (!isSharedQuery(input)) return check(input)
        let result = passed.get(input)
        if (result === undefined) {
          const checked = check(input)
          if (!('value' in checked)) return checked
          result = { value: Object.freeze(checked.value) }
          passed.set(input, result)
        }
        return result
      }
    }
    return (input: unknown) => {
      // No body at all (no content type either) reaches here as null, as a body of `null` does.
      if (part === 'body' && (input === null || input === undefined)) {
        return { error: new ApiError('invalid_body', 'request body must be a JSON object') }
      }
      // Passing, the part is left as it is: given back as `{ value }`, Fastify would set it again, and a
      // request whose headers were set copies them all on every read of `request.headers`.
      return validator.Check(input) ? true : fail(input)
    }
  }
}
