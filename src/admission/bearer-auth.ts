import type { FastifyRequest } from 'fastify'
import type { Authenticate } from '../auth/authenticator.ts'
import { ApiError } from '../errors.ts'
import { countHeader } from '../http/raw-headers.ts'
import type { KeyIdentity } from '../store/store.ts'

// RFC 6750 §3: a request without credentials gets the challenge alone; a bad token gets an error code.
const CHALLENGE = 'Bearer realm="petstore"'
const INVALID_TOKEN = `${CHALLENGE}, error="invalid_token"`
const INVALID_REQUEST = `${CHALLENGE}, error="invalid_request"`
// RFC 6750 §2.1's b64token: every key is of it (psk_ and base64url); any other token is malformed.
const BEARER = /^bearer +([A-Za-z0-9\-._~+/]+=*) *$/i
const BEARER_SCHEME = /^bearer(?:[ \t]|$)/i

// The refusals never vary, so each is built once: 401s are what a service receives by the thousand when it is
// probed or attacked (docs/decisions.md, "Per-request cost").
// Not frozen: pino's error serializer marks an error (and unmarks it) while it writes it to the log.
const refusal = (message: string, challenge: string) =>
  new ApiError('unauthorized', message, { 'www-authenticate': challenge })
const MISSING_KEY = refusal('missing API key: send "Authorization: Bearer <key>"', CHALLENGE)
const REPEATED_HEADER = refusal('more than one Authorization header', INVALID_REQUEST)
const MALFORMED_HEADER = refusal('malformed Authorization header: expected "Bearer <key>"', INVALID_REQUEST)
// `Bearer $KEY` with the variable unset: the key is missing, not malformed.
const NO_KEY = refusal('no key after "Bearer": send "Authorization: Bearer <key>"', INVALID_REQUEST)
const SCHEME_ALONE = /^bearer *$/i
// RFC 6750 §3.1: a request with another scheme (Basic, or a key alone) has no bearer error to be told.
const OTHER_SCHEME = refusal('the Authorization header is not "Bearer <key>"', CHALLENGE)
const UNKNOWN_KEY = refusal('invalid or revoked API key', INVALID_TOKEN)

export type BearerCheck = (
  request: FastifyRequest,
) => KeyIdentity | ApiError | Promise<KeyIdentity | ApiError>

/**
 * Checks a request's `Authorization: Bearer <key>`: the key's identity, or the 401 to answer. Synchronous
 * while the key's lookup is cached, which is nearly always; a promise only when the store is asked.
 */
export function bearerAuth(authenticate: Authenticate): BearerCheck {
  const identityOrRefusal = (identity: KeyIdentity | undefined) => identity ?? UNKNOWN_KEY
  return function checkBearer(request) {
    const header = request.headers.authorization
    if (header === undefined) return MISSING_KEY
    // Node keeps only the first of repeated Authorization headers; an ambiguous request is refused instead.
    if (countHeader(request.raw.rawHeaders, 'authorization') > 1) return REPEATED_HEADER
    const token = BEARER.exec(header)?.[1]
    if (token === undefined) {
      if (!BEARER_SCHEME.test(header)) return OTHER_SCHEME
      return SCHEME_ALONE.test(header) ? NO_KEY : MALFORMED_HEADER
    }
    const identity = authenticate(token)
    return identity instanceof Promise ? identity.then(identityOrRefusal) : identityOrRefusal(identity)
  }
}
