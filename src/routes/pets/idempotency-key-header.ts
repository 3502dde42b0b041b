import type { FastifyRequest } from 'fastify'
import Type from 'typebox'
import { ApiError } from '../../errors.ts'
import { countHeader } from '../../http/raw-headers.ts'
import { withAllowedForm, withRefusalCode } from '../../schemas/schema-rules.ts'

// The IETF draft makes the value a Structured Field string ("…"); Stripe and most clients send it bare.
// Both are accepted: 1 to 255 printable ASCII characters, bare (not starting with a quote), or quoted with
// `"` and `\` escaped. A repeated header is refused (`idempotencyKeyOf` counts it).
const PATTERN = String.raw`^(?:[!#-~][!-~]{0,254}|"(?:[ !#-\[\]-~]|\\["\\]){1,255}")$`
const SENT_ONCE =
  'sent once, as 1 to 255 printable ASCII characters: bare (no space, not opening with ") or as a quoted ' +
  'string with " and \\ escaped'
// The longest quoted form: 255 escaped characters between the quotes.
const MAX_LENGTH = 2 + 2 * 255

/**
 * The Idempotency-Key request header: the route validates it with this schema (a malformed or repeated key
 * is 400 `invalid_idempotency_key`) and the OpenAPI document shows it.
 */
export const IdempotencyKeySchema = withRefusalCode(
  withAllowedForm(
    Type.String({
      minLength: 1,
      maxLength: MAX_LENGTH,
      pattern: PATTERN,
      description:
        'Makes the create safe to retry: 1 to 255 printable ASCII characters, bare (no space, not opening with `"`) ' +
        'or as a quoted string (as in the IETF draft, `"` and `\\` escaped; a key with a space goes quoted). A key ' +
        'quoted and the same key bare are one key. Unique per API key, sent once. Kept `IDEMPOTENCY_RETENTION_S` (24 hours by default). ' +
        'The same key with the same pet replays the first 201 (with `Idempotent-Replayed: true`); with a different ' +
        'pet it is 422; while the first request is still running it is 409.',
    }),
    SENT_ONCE,
  ),
  'invalid_idempotency_key',
)

/** The request's idempotency key, if it sent one, unquoted; the route's schema has checked its form. */
export function idempotencyKeyOf(request: FastifyRequest): string | undefined {
  const value = request.headers['idempotency-key']
  if (typeof value !== 'string') return undefined
  // Two halves may join into one valid quoted key (`"a` and `b"`): counted as sent, not as joined.
  if (countHeader(request.raw.rawHeaders, 'idempotency-key') > 1)
    throw new ApiError('invalid_idempotency_key', `header "idempotency-key" must be ${SENT_ONCE}`)
  return value.startsWith('"') ? value.slice(1, -1).replace(/\\(["\\])/g, '$1') : value
}
