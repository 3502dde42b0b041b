import { STATUS_CODES } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import { ApiError, type ErrorCode, isApiError, StoreUnavailableError } from '../errors.ts'

type FrameworkError = FastifyError & { validationContext?: string }

/** Fastify's own errors, raised before any handler runs, in our words. */
const FRAMEWORK_ERRORS: Record<string, (error: FrameworkError, request: FastifyRequest) => ApiError> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: (_e, request) =>
    new ApiError(
      'unsupported_media_type',
      `Content-Type ${JSON.stringify(request.headers['content-type'] ?? '')} is not supported: send application/json`,
    ),
  FST_ERR_CTP_INVALID_TYPE: () => new ApiError('unsupported_media_type', 'Content-Type header is not valid'),
  FST_ERR_CTP_EMPTY_TYPE: () => new ApiError('unsupported_media_type', 'Content-Type header is empty'),
  FST_ERR_CTP_BODY_TOO_LARGE: (_e, request) =>
    new ApiError(
      'body_too_large',
      `request body is over the limit of ${request.routeOptions.bodyLimit} bytes`,
    ),
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: () =>
    new ApiError('bad_request', 'Content-Length does not match the request body'),
  FST_ERR_CTP_EMPTY_JSON_BODY: () =>
    new ApiError('malformed_json', 'request body is empty; a JSON object is required'),
  FST_ERR_CTP_INVALID_JSON_BODY: () => new ApiError('malformed_json', 'request body is not valid JSON'),
  FST_ERR_BAD_URL: () => new ApiError('bad_request', 'the URL has a malformed percent-encoding'),
  FST_ERR_MAX_PARAM_LENGTH: () => new ApiError('invalid_path_parameter', 'a path parameter is too long'),
}

/** Codes for errors that carry only an HTTP status (from the framework or a plugin). */
const BY_STATUS: Record<number, ErrorCode> = {
  400: 'bad_request',
  401: 'unauthorized',
  404: 'route_not_found',
  405: 'method_not_allowed',
  408: 'request_timeout',
  413: 'body_too_large',
  415: 'unsupported_media_type',
  429: 'rate_limited',
  431: 'headers_too_large',
  503: 'service_unavailable',
}

function toApiError(error: FrameworkError, request: FastifyRequest): ApiError {
  if (isApiError(error)) return error
  if (error instanceof StoreUnavailableError) {
    return new ApiError('service_unavailable', 'the store is unavailable; retry shortly', {
      'retry-after': '1',
    })
  }
  const framework = error.code === undefined ? undefined : FRAMEWORK_ERRORS[error.code]
  if (framework !== undefined) return framework(error, request)
  const status = error.statusCode ?? 500
  const code = BY_STATUS[status]
  if (status < 500 && code !== undefined)
    return new ApiError(code, error.message || (STATUS_CODES[status] ?? ''))
  if (status < 500) return new ApiError('bad_request', error.message || 'the request could not be processed')
  return new ApiError('internal_error', `internal error (request id ${request.id})`)
}

/** The one error handler: every error, ours or the framework's, leaves as `{code, message, status}`. */
export function handleError(error: FrameworkError, request: FastifyRequest, reply: FastifyReply): void {
  const apiError = toApiError(error, request)
  if (apiError.statusCode >= 500) request.log.error({ err: error }, 'request failed')
  else request.log.debug({ code: apiError.code }, apiError.message)
  reply
    .code(apiError.statusCode)
    .headers(apiError.headers)
    .type('application/json; charset=utf-8')
    .send({ code: apiError.code, message: apiError.message, status: apiError.statusCode })
}

export function handleRouteNotFound(request: FastifyRequest, reply: FastifyReply): void {
  const path = request.url.split('?')[0] ?? ''
  handleError(
    new ApiError('route_not_found', `no operation at ${request.method} ${path.slice(0, 200)}`),
    request,
    reply,
  )
}

/** A handler for paths that exist, reached with a method they do not serve. */
export function methodNotAllowed(allowed: readonly string[]) {
  const allow = allowed.join(', ')
  return (request: FastifyRequest, reply: FastifyReply) =>
    handleError(
      new ApiError('method_not_allowed', `${request.method} is not allowed here; allowed: ${allow}`, {
        allow,
      }),
      request,
      reply,
    )
}

/**
 * Errors Node's HTTP parser raises before Fastify sees a request (bad framing, oversized headers, slow
 * clients): answered on the raw socket, in the same Error body, then the connection is closed.
 */
export function handleClientError(error: Error & { code?: string }, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed || !socket.writable) {
    socket.destroy()
    return
  }
  const apiError =
    error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? new ApiError('request_timeout', 'the request was not received in time')
      : error.code === 'HPE_HEADER_OVERFLOW'
        ? new ApiError('headers_too_large', 'the request line and headers are too large')
        : new ApiError('bad_request', 'the request is not valid HTTP/1.1')
  const body = JSON.stringify({ code: apiError.code, message: apiError.message, status: apiError.statusCode })
  socket.end(
    `HTTP/1.1 ${apiError.statusCode} ${STATUS_CODES[apiError.statusCode]}\r\n` +
      'Content-Type: application/json; charset=utf-8\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  )
}
