import type { TSchema } from 'typebox'
import type { TLocalizedValidationError } from 'typebox/error'
import { INT64_RULE, isInt64Schema } from './int64.ts'

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
  properties?: Record<string, SchemaNode>
  additionalProperties?: boolean
}

/** States a field's whole rule, so one message tells the client what would have been accepted. */
export function ruleOf(node: SchemaNode | undefined): string {
  if (node === undefined) return 'is not valid'
  if (isInt64Schema(node as TSchema)) return INT64_RULE
  if (node.enum) return `must be one of: ${node.enum.join(', ')}`
  if (node.type === 'integer') return `must be an integer from ${node.minimum} to ${node.maximum}`
  if (node.allowedForm !== undefined) return `must be ${node.allowedForm}`
  if (node.type === 'string' && node.maxLength !== undefined) {
    return `must be a string of ${node.minLength ?? 0} to ${node.maxLength} characters`
  }
  if (node.type === 'string' && node.pattern !== undefined) return `must match ${node.pattern}`
  return `must be of type ${node.type}`
}

/**
 * The rule one validation error broke, in words: a refinement's own message, the pattern's allowed form
 * (or the pattern) when that is what failed (the field's length may be fine), else the field's whole rule.
 */
export function brokenRule(error: TLocalizedValidationError, node: SchemaNode | undefined): string {
  if (error.keyword === '~refine') return error.params.message
  if (error.keyword === 'pattern' && node?.allowedForm !== undefined) return `must be ${node.allowedForm}`
  if (error.keyword === 'pattern' && node?.pattern !== undefined) return `must match ${node.pattern}`
  return ruleOf(node)
}
