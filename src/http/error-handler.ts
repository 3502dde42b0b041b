import { type IncomingMessage, STATUS_CODES } from 'node:http'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import {
  ApiError,
  codeForStatus,
  type ErrorCode,
  isApiError,
  NewerSchemaError,
  StoreUnavailableError,
  serviceUnavailable,
} from '../errors.ts'
import { maskApiKeys, maskCutApiKeys } from '../log/key-masking.ts'
import { logCondition } from './condition-log.ts'
import { lingerOnClose } from './connection-close.ts'
import { contentTypeRepeated } from './raw-headers.ts'
import { awaitsInvitation } from './request-head.ts'

type FrameworkError = FastifyError & { validationContext?: string }

declare module 'fastify' {
  interface FastifyRequest {
    /** The Error body's code this request was answered with, for its access line; null until then. */
    errorCode: ErrorCode | null
  }
}

/** Gives every request its `errorCode`, null unless refused: on the root app, so all share one shape. */
export function decorateErrorCode(app: FastifyInstance): void {
  app.decorateRequest('errorCode', null)
}

// `%ff` is well formed but no UTF-8: the router refuses both kinds alike, so the message names both.
export const BAD_URL = () =>
  new ApiError(
    'bad_request',
    'the URL has a malformed percent-encoding: a % not followed by two hex digits, or bytes that are not UTF-8',
  )

/**
 * Fastify's own errors that a request can meet, raised before any handler runs, in our words (the JSON
 * body's are json-body-parser.ts's own; a path parameter is never too long: app.ts, MAX_PARAM_LENGTH).
 */
const FRAMEWORK_ERRORS: Record<string, (error: FrameworkError, request: FastifyRequest) => ApiError> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: (_e, request) =>
    contentTypeRepeated(request.raw.rawHeaders) ??
    (request.headers['content-type'] === undefined
      ? new ApiError(
          'unsupported_media_type',
          'a request body needs Content-Type: application/json, and none was sent',
        )
      : new ApiError(
          'unsupported_media_type',
          `Content-Type ${JSON.stringify(request.headers['content-type'])} is not supported: send application/json`,
        )),
  FST_ERR_CTP_BODY_TOO_LARGE: (_e, request) =>
    new ApiError(
      'body_too_large',
      `request body is over the limit of ${request.routeOptions.bodyLimit} bytes`,
    ),
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: () =>
    new ApiError('bad_request', 'Content-Length does not match the request body'),
  // An absolute-form target the router could not read as a URL (a port out of range, a bad host).
  FST_ERR_BAD_URL: (_e, request) =>
    request.url.charCodeAt(0) === 0x2f
      ? BAD_URL()
      : new ApiError('bad_request', 'the request target is not a valid absolute URL (RFC 9112 §3.2.2)'),
  // QUERY without a Content-Type (RFC 10008): checked even where no operation is; that is said first.
  FST_ERR_ROUTE_MISSING_CONTENT_TYPE: (_e, request) =>
    request.is404
      ? routeNotFound(request.method, request.url)
      : new ApiError('unsupported_media_type', `${request.method} needs a Content-Type`),
}

/**
 * Fastify's own errors (made with @fastify/error). Only they are trusted to choose a status and to be
 * described: anything else that reaches the handler — a store or library failure, whatever `statusCode`
 * or `code` it happens to carry, even `null` — is a 500 whose detail stays in the log.
 */
export function isFrameworkError(error: unknown): error is FrameworkError {
  return error instanceof Error && error.name === 'FastifyError'
}

function toApiError(error: unknown, request: FastifyRequest): ApiError {
  if (isApiError(error)) return error
  // Only a deploy mends it: the balancer is sent elsewhere by /readyz, and a retry should go there too.
  if (error instanceof NewerSchemaError) {
    return serviceUnavailable(
      "this instance's release is older than the database schema; retry on another instance",
      { retryAfterS: 5 },
    )
  }
  if (error instanceof StoreUnavailableError) {
    return serviceUnavailable('the store is unavailable; retry shortly')
  }
  // A client that went away or was cut off mid-body makes the body stream fail with Node's own error:
  // the client's doing, not ours (and nobody is left to answer). An incomplete body means no handler ran.
  if (!request.raw.complete && (request.raw.aborted || request.raw.socket?.destroyed)) {
    return new ApiError('bad_request', 'the request was not received completely')
  }
  const internal = () => new ApiError('internal_error', `internal error (request id ${request.id})`)
  if (!isFrameworkError(error)) return internal()
  const framework = FRAMEWORK_ERRORS[error.code]
  if (framework !== undefined) return framework(error, request)
  const status = error.statusCode ?? 500
  if (status >= 500) return internal()
  return new ApiError(codeForStatus(status) ?? 'bad_request', STATUS_CODES[status] ?? 'bad request')
}

/** The one error handler: every error, ours or the framework's, leaves as `{code, message, status}`. */
export function handleError(error: unknown, request: FastifyRequest, reply: FastifyReply): void {
  const apiError = toApiError(error, request)
  request.errorCode = apiError.code
  // Both last while requests keep meeting them: logged once per condition, not once per request.
  if (apiError.statusCode === 503 || apiError.statusCode === 507) {
    logCondition(error, apiError, request, reply.elapsedTime)
  } else if (apiError.statusCode >= 500) request.log.error({ err: error }, 'request failed')
  else request.log.debug({ code: apiError.code }, 'request refused')
  // A large body still on its way (refused before it was read: no key, a wrong type) would be read to its
  // end to keep the connection, up to a gigabyte: the connection is closed after the answer instead, with
  // the client given a moment to read it. A small one is read and the connection kept.
  if (!request.raw.complete && largeBodyAnnounced(request.raw)) {
    reply.header('connection', 'close')
    lingerOnClose(request.raw.socket)
  } else if (
    reply.getHeader('connection') === 'close' &&
    !reply.raw.hasHeader('connection') &&
    (request.raw.complete || !awaitsInvitation(request.raw))
  ) {
    // Fastify closes the connection after any body it could not parse (malformed, over the limit): one
    // read whole, or small enough for Node to read past, leaves the next request where it belongs. (Node
    // then keeps the connection without saying so: HTTP/1.1's default.) A body never invited (Expect:
    // 100-continue) is not on its way: that connection closes, and says so.
    reply.removeHeader('connection')
  }
  reply
    .code(apiError.statusCode)
    .headers(apiError.headers)
    .type('application/json; charset=utf-8')
    .send(answerBody(apiError))
}

// Up to this much of a refused body is read (and the connection kept), as Node does by itself.
const UNREAD_BODY_READ_BYTES = 64 * 1024

/** Whether the request announces a body over that (a chunked one may be any size). */
export function largeBodyAnnounced({ headers }: IncomingMessage): boolean {
  const length = headers['content-length']
  return (
    headers['transfer-encoding'] !== undefined ||
    (length !== undefined && Number(length) > UNREAD_BODY_READ_BYTES)
  )
}

/** 404: no operation at that method and URL. */
export function routeNotFound(method: string, url: string): ApiError {
  const path = url.split('?')[0] ?? ''
  // HEAD's answer is GET's without the body, its Content-Length too (RFC 9110 §8.6): the message says GET.
  const asked = method === 'HEAD' ? 'GET' : method
  // Masked before it is cut: a key cut in two would no longer look like one.
  return new ApiError('route_not_found', `no operation at ${asked} ${maskApiKeys(path).slice(0, 200)}`)
}

/** The Error body as sent: a key quoted from the request (a path, a media type, a field) never in it. */
export function answerBody(apiError: ApiError): string {
  // Cut keys are looked for only where a message was cut: a 401's body is sent by the thousand.
  return maskCutApiKeys(maskApiKeys(apiError.toJson()))
}

/** 405 (RFC 9110 §15.5.6): the path serves other methods, which `Allow` lists (empty: none). */
export function methodNotAllowed(method: string, allow: string): ApiError {
  return new ApiError('method_not_allowed', `${method} is not allowed here; allowed: ${allow || 'none'}`, {
    allow,
  })
}

/**
 * No route: 404, but for the asterisk form (RFC 9112 §3.2.4), which names the server, not a resource: only
 * OPTIONS may ask for it, refused as any OPTIONS that is no preflight (405, nothing allowed); others, 400.
 */
export function handleRouteNotFound(request: FastifyRequest, reply: FastifyReply): void {
  const { method, url } = request
  const refusal =
    url !== '*'
      ? routeNotFound(method, url)
      : method === 'OPTIONS'
        ? methodNotAllowed(method, '')
        : new ApiError('bad_request', 'the request target "*" is only for OPTIONS (RFC 9112 §3.2.4)')
  handleError(refusal, request, reply)
}
