import type { FastifyRequest } from 'fastify'
import { ApiError } from '../errors.ts'
import { findDuplicateKey } from './json-duplicate-keys.ts'
import { countHeader } from './raw-headers.ts'

// JSON.parse has already checked the number's syntax; without fraction or exponent it is an integer.
const FRACTION_OR_EXPONENT = /[.eE]/
// Keys that would reach an object's prototype if the body were ever merged or copied carelessly.
const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype'])
const CHARSET = /;\s*charset\s*=\s*"?([^";\s]*)/i
const UTF8 = new Set(['utf-8', 'utf8'])
const utf8 = new TextDecoder('utf-8', { fatal: true })

interface ReviverContext {
  source?: string
}

/**
 * Keeps integers exact: JSON.parse gives the reviver each number's source text, and every integer literal
 * becomes a bigint (a JS number would round above 2^53). Numbers written with a fraction or an exponent
 * stay numbers, which the int64 check then refuses — `1.0` is not silently taken for `1`; nor is `-0`
 * taken for `0`.
 */
function reviveExactly(this: unknown, key: string, value: unknown, context?: ReviverContext): unknown {
  if (FORBIDDEN_KEYS.has(key)) throw new ApiError('invalid_body', `body field "${key}" is not allowed`)
  const source = context?.source
  if (
    typeof value === 'number' &&
    source !== undefined &&
    source !== '-0' &&
    !FRACTION_OR_EXPONENT.test(source)
  ) {
    return BigInt(source)
  }
  return value
}

/** Refuses what would otherwise be read as something else than what the client meant to send. */
function checkEnvelope(request: FastifyRequest): void {
  const charset = CHARSET.exec(request.headers['content-type'] ?? '')?.[1]?.toLowerCase()
  if (charset !== undefined && !UTF8.has(charset)) {
    throw new ApiError('unsupported_media_type', `charset "${charset}" is not supported: send UTF-8 JSON`)
  }
  const encoding = request.headers['content-encoding']
  if (encoding !== undefined && encoding.toLowerCase() !== 'identity') {
    throw new ApiError('unsupported_media_type', `Content-Encoding "${encoding}" is not supported`)
  }
  if (countHeader(request.raw.rawHeaders, 'content-type') > 1) {
    throw new ApiError('bad_request', 'more than one Content-Type header')
  }
}

function parse(request: FastifyRequest, body: Buffer): unknown {
  checkEnvelope(request)
  if (body.length === 0)
    throw new ApiError('malformed_json', 'request body is empty; a JSON object is required')
  let text: string
  try {
    text = utf8.decode(body)
  } catch {
    throw new ApiError('malformed_json', 'request body is not valid UTF-8')
  }
  let value: unknown
  try {
    value = JSON.parse(text, reviveExactly as (key: string, value: unknown) => unknown)
  } catch (error) {
    if (error instanceof ApiError) throw error
    if (error instanceof RangeError) throw new ApiError('malformed_json', 'request body is nested too deeply')
    throw new ApiError('malformed_json', `request body is not valid JSON: ${(error as Error).message}`)
  }
  const duplicate = findDuplicateKey(text)
  if (duplicate !== undefined)
    throw new ApiError('invalid_body', `body field "${duplicate}" is given more than once`)
  return value
}

/** Fastify content-type parser for `application/json` bodies (registered with `parseAs: 'buffer'`). */
export function parseJsonBody(
  request: FastifyRequest,
  body: Buffer,
  done: (error: Error | null, value?: unknown) => void,
): void {
  let value: unknown
  try {
    value = parse(request, body)
  } catch (error) {
    done(error as Error)
    return
  }
  done(null, value)
}
