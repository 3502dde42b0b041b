import Type, { type TSchema } from 'typebox'
import { ERROR_CODES, type ErrorCode } from '../errors.ts'
import { responseHeader } from './response-headers.ts'

const HEADERS: Record<number, Record<string, object>> = {
  // RFC 6750 §3: every 401 carries the bearer challenge.
  401: { 'WWW-Authenticate': responseHeader('The bearer challenge (RFC 6750).') },
  409: {
    'Retry-After': responseHeader(
      'Seconds to wait before retrying: the first request with this Idempotency-Key is still running.',
    ),
  },
  429: {
    'Retry-After': responseHeader('Seconds until the limit resets.'),
    'RateLimit-Limit': responseHeader('Requests allowed per window (IETF RateLimit header fields draft).'),
    'RateLimit-Remaining': responseHeader('Requests left in the window.'),
    'RateLimit-Reset': responseHeader('Seconds until the window resets.'),
  },
  503: { 'Retry-After': responseHeader('Seconds to wait before retrying.', { required: false }) },
}

/**
 * The error responses of an operation, for its route schema: one entry per status, its description made
 * from the summaries of the codes the operation can answer with, so the document never restates them.
 */
export function errorResponses(...codes: ErrorCode[]): Record<number, TSchema> {
  const byStatus = new Map<number, ErrorCode[]>()
  for (const code of codes) {
    const { status } = ERROR_CODES[code]
    byStatus.set(status, [...(byStatus.get(status) ?? []), code])
  }
  return Object.fromEntries(
    [...byStatus].map(([status, list]) => [
      status,
      Type.Ref('Error', {
        description: list.map((code) => `\`${code}\`: ${ERROR_CODES[code].summary}`).join(' '),
        ...(HEADERS[status] ? { headers: HEADERS[status] } : {}),
      }),
    ]),
  )
}

/** What can go wrong with any authenticated operation. */
export const COMMON_ERRORS: ErrorCode[] = [
  'bad_request',
  // Answered by the HTTP layer before any route runs, so possible on every operation.
  'request_timeout',
  'expectation_failed',
  'headers_too_large',
  'unauthorized',
  'rate_limited',
  'internal_error',
  'service_unavailable',
]
