import Type, { type TSchema } from 'typebox'
import { ERROR_CODES, type ErrorCode } from '../../errors.ts'
import { REQUEST_ID_HEADER, responseHeader, SECONDS, URL_MAX_LENGTH } from './response-headers.ts'

type Headers = Record<string, object>

/** The key under which an error response's schema carries its examples, for the document only (openapi.ts). */
export const ERROR_EXAMPLES = Symbol('error examples')

// Every answer (those made on the raw socket too, see RAW_SOCKET; raw-answers.ts, HEADERS_OF_EVERY_ANSWER).
const EVERY_ANSWER: Headers = {
  'X-Request-Id': REQUEST_ID_HEADER,
  'X-Content-Type-Options': responseHeader('Browsers take the answer as its `Content-Type` says.', {
    enum: ['nosniff'],
  }),
}

/** On every answer but a read's 200 and 304, which say their own (pet-route-schemas.ts). */
export const NOT_STORED: Headers = {
  'Cache-Control': responseHeader('No cache keeps the answer: it holds per-key data or a passing state.', {
    enum: ['no-store'],
  }),
}

/** Sent by the CORS plugin on every answer Fastify gives (the raw socket's are not Fastify's). */
const CORS_HEADERS: Headers = {
  'Access-Control-Allow-Origin': responseHeader(
    "The request's `Origin`, when it is one of `CORS_ORIGINS` (CORS is off by default).",
    { maxLength: URL_MAX_LENGTH, pattern: '^[a-z][a-z0-9+.-]*://[^/\\s]+$' },
    { required: false },
  ),
  'Access-Control-Expose-Headers': responseHeader(
    'The headers a script of that origin may read, with `Access-Control-Allow-Origin`.',
    { maxLength: 300, pattern: '^[a-z-]+(, [a-z-]+)*$' },
    { required: false },
  ),
  Vary: responseHeader(
    "`Origin` when CORS is on: the answer depends on the request's origin.",
    {
      enum: ['Origin'],
    },
    { required: false },
  ),
}

/**
 * The IETF RateLimit fields (rate-limit.ts): on every answer counted against the key's limit, which is
 * every answer after authentication; absent when rate limiting is off or its counter (Redis) failed.
 */
function rateLimitHeaders(required = false): Headers {
  return {
    'RateLimit-Limit': responseHeader(
      'Requests allowed to this API key per 60-second window (`RATE_LIMIT_PER_MINUTE`).',
      SECONDS,
      { required },
    ),
    'RateLimit-Remaining': responseHeader('Requests left in the current window.', SECONDS, { required }),
    'RateLimit-Reset': responseHeader('Seconds until the current window ends.', SECONDS, { required }),
  }
}

/** Every answer of an operation that Fastify gives after counting the request. */
export const COUNTED_HEADERS: Headers = { ...EVERY_ANSWER, ...rateLimitHeaders(), ...CORS_HEADERS }

// Answered on the raw socket by the HTTP layer, before any hook runs: none of the headers above. They carry
// X-Request-Id too, left out here: a response with headers but no CORS one fails OWASP's rule (api8).
const RAW_SOCKET = new Set([408, 417, 431])
// Answered before the request is counted: no key yet (401), the operation gone (410), or a target too long
// to read (414; made on the raw socket too, when the line alone is over the head's limit).
const UNCOUNTED = new Set([401, 410, 414])
// Refused in the request's head, before the operation's own hooks: none of its headers (getPet's
// deprecation) either.
const BEFORE_OPERATION = new Set([414])

const HEADERS: Record<number, Headers> = {
  // RFC 6750 §3: every 401 carries the bearer challenge.
  401: {
    'WWW-Authenticate': responseHeader('The bearer challenge (RFC 6750).', {
      maxLength: 100,
      pattern: '^Bearer realm="petstore"(, error="[a-z_]+")?$',
    }),
  },
  409: {
    'Retry-After': responseHeader(
      'Seconds to wait before retrying: the first request with this Idempotency-Key is still running.',
      SECONDS,
    ),
  },
  // Only the rate limiter answers 429, after counting: the RateLimit fields are always there.
  429: {
    'Retry-After': responseHeader('Seconds until the limit resets.', SECONDS),
    ...rateLimitHeaders(true),
  },
  // RFC 9110 §15.5.16: a body refused for its Content-Encoding is told the encodings accepted.
  415: {
    'Accept-Encoding': responseHeader(
      'Present when the body was refused for its Content-Encoding: only `identity` is accepted.',
      { enum: ['identity'] },
      { required: false },
    ),
  },
  503: { 'Retry-After': responseHeader('Seconds to wait before retrying.', SECONDS) },
}

function headersOf(status: number, operationHeaders: Headers): Headers | undefined {
  if (RAW_SOCKET.has(status)) return undefined
  const counted = UNCOUNTED.has(status) ? { ...EVERY_ANSWER, ...CORS_HEADERS } : COUNTED_HEADERS
  const operation = BEFORE_OPERATION.has(status) ? {} : operationHeaders
  return { ...operation, ...counted, ...NOT_STORED, ...HEADERS[status] }
}

/** One example per code: the body as the service writes it, its message the code's summary. */
function examplesOf(codes: ErrorCode[]): Record<string, object> {
  return Object.fromEntries(
    codes.map((code) => {
      const { status, summary } = ERROR_CODES[code]
      return [code, { summary: `${status} ${code}`, value: { code, message: summary, status } }]
    }),
  )
}

/**
 * An operation's error responses for its route schema: one entry per status, described by the summaries of
 * its codes, with one example per code, so the document never restates them. `operationHeaders` go on every
 * answer of the operation Fastify gives once the request's head is accepted.
 */
export function errorResponses(codes: ErrorCode[], operationHeaders: Headers = {}): Record<number, TSchema> {
  const byStatus = new Map<number, ErrorCode[]>()
  for (const code of codes) {
    const { status } = ERROR_CODES[code]
    byStatus.set(status, [...(byStatus.get(status) ?? []), code])
  }
  return Object.fromEntries(
    [...byStatus].map(([status, list]) => {
      const headers = headersOf(status, operationHeaders)
      const schema = Type.Ref('Error', {
        description: list.map((code) => `\`${code}\`: ${ERROR_CODES[code].summary}`).join(' '),
        ...(headers ? { headers } : {}),
      })
      return [status, Object.assign(schema, { [ERROR_EXAMPLES]: examplesOf(list) })]
    }),
  )
}

/** What can go wrong with any authenticated operation. */
export const COMMON_ERRORS: ErrorCode[] = [
  'bad_request',
  // Answered by the HTTP layer before any route runs, so possible on every operation.
  'request_timeout',
  'expectation_failed',
  'headers_too_large',
  'uri_too_long',
  'unauthorized',
  'rate_limited',
  'internal_error',
  'service_unavailable',
]
