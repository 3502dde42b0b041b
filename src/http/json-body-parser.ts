import type { FastifyRequest } from 'fastify'
import { ApiError } from '../errors.ts'

// JSON.parse has already checked the number's syntax; without fraction or exponent it is an integer.
const FRACTION_OR_EXPONENT = /[.eE]/

// Keys that would reach an object's prototype if the body were ever merged or copied carelessly.
const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype'])

interface ReviverContext {
  source?: string
}

/**
 * Keeps integers exact: JSON.parse gives the reviver each number's source text, and every integer literal
 * becomes a bigint (a JS number would round above 2^53). Numbers written with a fraction or an exponent
 * stay numbers, which the int64 check then refuses — `1.0` is not silently taken for `1`.
 */
function reviveExactly(this: unknown, key: string, value: unknown, context?: ReviverContext): unknown {
  if (FORBIDDEN_KEYS.has(key)) throw new ApiError('invalid_body', `body field "${key}" is not allowed`)
  if (
    typeof value === 'number' &&
    context?.source !== undefined &&
    !FRACTION_OR_EXPONENT.test(context.source)
  ) {
    return BigInt(context.source)
  }
  return value
}

/** Fastify content-type parser for `application/json` bodies (registered with `parseAs: 'string'`). */
export function parseJsonBody(
  _request: FastifyRequest,
  body: string,
  done: (error: Error | null, value?: unknown) => void,
): void {
  if (body.length === 0) {
    done(new ApiError('malformed_json', 'request body is empty; a JSON object is required'))
    return
  }
  let value: unknown
  try {
    value = JSON.parse(body, reviveExactly as (key: string, value: unknown) => unknown)
  } catch (error) {
    done(
      error instanceof ApiError
        ? error
        : new ApiError('malformed_json', `request body is not valid JSON: ${(error as Error).message}`),
    )
    return
  }
  done(null, value)
}
