import type { FastifyRequest } from 'fastify'
import type { Authenticate } from '../auth/authenticator.ts'
import { ApiError } from '../errors.ts'
import type { KeyIdentity } from '../store/store.ts'
import { countHeader } from './raw-headers.ts'

declare module 'fastify' {
  interface FastifyRequest {
    /** The API key that authenticated this request; set by the bearer-auth hook. */
    apiKey: KeyIdentity | null
  }
}

// RFC 6750 §3: a request without credentials gets the challenge alone; a bad token gets an error code.
const CHALLENGE = 'Bearer realm="petstore"'
const INVALID_TOKEN = `${CHALLENGE}, error="invalid_token"`
const INVALID_REQUEST = `${CHALLENGE}, error="invalid_request"`
const BEARER = /^bearer +(\S+) *$/i

/** An onRequest hook: runs before the body is read, so unauthenticated requests cost almost nothing. */
export function bearerAuth(authenticate: Authenticate) {
  return async function requireApiKey(request: FastifyRequest): Promise<void> {
    const header = request.headers.authorization
    if (header === undefined) {
      throw new ApiError('unauthorized', 'missing API key: send "Authorization: Bearer <key>"', {
        'www-authenticate': CHALLENGE,
      })
    }
    // Node keeps only the first of repeated Authorization headers; an ambiguous request is refused instead.
    if (countHeader(request.raw.rawHeaders, 'authorization') > 1) {
      throw new ApiError('unauthorized', 'more than one Authorization header', {
        'www-authenticate': INVALID_REQUEST,
      })
    }
    const token = BEARER.exec(header)?.[1]
    if (token === undefined) {
      throw new ApiError('unauthorized', 'malformed Authorization header: expected "Bearer <key>"', {
        'www-authenticate': INVALID_REQUEST,
      })
    }
    const identity = await authenticate(token)
    if (identity === undefined) {
      throw new ApiError('unauthorized', 'invalid or revoked API key', { 'www-authenticate': INVALID_TOKEN })
    }
    request.apiKey = identity
  }
}
