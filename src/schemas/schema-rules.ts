import type { TSchema } from 'typebox'
import type { TLocalizedValidationError } from 'typebox/error'
import type { ErrorCode } from '../errors.ts'
import { INT64_RULE, isInt64Schema, LITERAL_FORM } from './int64.ts'

/** The JSON Schema keywords our schemas use, as the error messages read them. */
export interface SchemaNode {
  $id?: string
  $ref?: string
  type?: string
  enum?: unknown[]
  format?: string
  minimum?: number
  maximum?: number
  minLength?: number
  maxLength?: number
  pattern?: string
  /** What `pattern` allows, in words ("a redis:// or rediss:// URL"): messages state it instead of the pattern. */
  allowedForm?: string
  /** The code a refused value is answered with, when not its request part's own (a header with a code). */
  refusalCode?: ErrorCode
  properties?: Record<string, SchemaNode>
  additionalProperties?: boolean
}

/** States a field's whole rule, so one message tells the client what would have been accepted. */
function ruleOf(node: SchemaNode | undefined): string {
  if (node === undefined) return 'is not valid'
  if (isInt64Schema(node as TSchema)) return INT64_RULE
  if (node.enum) return `must be one of: ${node.enum.join(', ')}`
  if (node.type === 'integer')
    return `must be an integer from ${node.minimum} to ${node.maximum}, ${LITERAL_FORM}`
  if (node.allowedForm !== undefined) return `must be ${node.allowedForm}`
  if (node.type === 'string' && node.maxLength !== undefined) {
    return `must be a string of ${node.minLength ?? 0} to ${node.maxLength} characters`
  }
  if (node.type === 'string' && node.pattern !== undefined) return 'is not in the form this field allows'
  return `must be of type ${node.type}`
}

/**
 * The rule one validation error broke, in words: a refinement's own message, the pattern's allowed form
 * when that is what failed (the field's length may be fine), else the field's whole rule. A regular
 * expression is never shown: it tells a client less than a sentence and exposes how input is checked.
 */
export function brokenRule(error: TLocalizedValidationError, node: SchemaNode | undefined): string {
  if (error.keyword === '~refine') return error.params.message
  if (error.keyword === 'pattern' && node?.allowedForm !== undefined) return `must be ${node.allowedForm}`
  return ruleOf(node)
}

/**
 * Gives a schema with a `pattern` the same rule in words, for error messages. Not enumerable, so it stays
 * out of the OpenAPI document (where the pattern and the description already say it).
 */
export function withAllowedForm<T extends object>(schema: T, allowedForm: string): T {
  Object.defineProperty(schema, 'allowedForm', { value: allowedForm, enumerable: false })
  return schema
}

/**
 * Gives a request field the error code its refusal is answered with, instead of its request part's (a
 * header is otherwise `bad_request`). Not enumerable, like `allowedForm`.
 */
export function withRefusalCode<T extends object>(schema: T, refusalCode: ErrorCode): T {
  Object.defineProperty(schema, 'refusalCode', { value: refusalCode, enumerable: false })
  return schema
}
