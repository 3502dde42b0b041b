import type { FastifyRequest } from 'fastify'
import { ApiError } from '../errors.ts'
import { countHeader } from './raw-headers.ts'

// The IETF draft makes the value a Structured Field string ("…"); Stripe and most clients send it bare.
// Both are accepted: printable ASCII, 1 to 255 characters.
const QUOTED = /^"((?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\["\\]){1,255})"$/
const BARE = /^[\x21-\x7e]{1,255}$/
const RULE = 'Idempotency-Key must be 1 to 255 printable ASCII characters, bare or as a quoted string'

/** The request's idempotency key, if it sent one; 400 when it is malformed or sent twice. */
export function idempotencyKeyOf(request: FastifyRequest): string | undefined {
  const header = request.headers['idempotency-key']
  if (header === undefined) return undefined
  if (countHeader(request.raw.rawHeaders, 'idempotency-key') > 1) {
    throw new ApiError('invalid_idempotency_key', 'more than one Idempotency-Key header')
  }
  const value = Array.isArray(header) ? '' : header.trim()
  const quoted = QUOTED.exec(value)
  if (quoted?.[1] !== undefined) return quoted[1].replace(/\\(["\\])/g, '$1')
  if (BARE.test(value) && !value.startsWith('"')) return value
  throw new ApiError('invalid_idempotency_key', RULE)
}
