import { type IncomingMessage, type ServerResponse, STATUS_CODES } from 'node:http'
import type { Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import { ApiError, codeForStatus, isApiError, StoreUnavailableError } from '../errors.ts'
import { logCondition } from './condition-log.ts'
import { type RawRefusal, type RecordRawRefusal, requestLineOf } from './raw-refusals.ts'
import { randomRequestId } from './request-id.ts'
import { requestIdOf } from './request-logging.ts'

type FrameworkError = FastifyError & { validationContext?: string }

const BAD_URL = () => new ApiError('bad_request', 'the URL has a malformed percent-encoding')

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
  FST_ERR_BAD_URL: () => BAD_URL(),
  FST_ERR_MAX_PARAM_LENGTH: () => new ApiError('invalid_path_parameter', 'a path parameter is too long'),
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
  if (error instanceof StoreUnavailableError) {
    return new ApiError('service_unavailable', 'the store is unavailable; retry shortly', {
      'retry-after': '1',
    })
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
  // Both last while requests keep meeting them: logged once per condition, not once per request.
  if (apiError.statusCode === 503 || apiError.statusCode === 507) logCondition(error, apiError, request)
  else if (apiError.statusCode >= 500) request.log.error({ err: error }, 'request failed')
  else request.log.debug({ code: apiError.code }, 'request refused')
  // A large body still on its way (refused before it was read: no key, a wrong type) would be read to its
  // end to keep the connection, up to a gigabyte: the connection is closed after the answer instead, with
  // the client given a moment to read it. A small one is read and the connection kept.
  if (!request.raw.complete && largeBodyAnnounced(request.raw)) {
    reply.header('connection', 'close')
    lingerOnClose(request.raw.socket)
  }
  reply
    .code(apiError.statusCode)
    .headers(apiError.headers)
    .type('application/json; charset=utf-8')
    .send(apiError.toJson())
}

// Up to this much of a refused body is read (and the connection kept), as Node does by itself.
const UNREAD_BODY_READ_BYTES = 64 * 1024

/** Whether the request announces a body over that (a chunked one may be any size). */
function largeBodyAnnounced({ headers }: IncomingMessage): boolean {
  const length = headers['content-length']
  return (
    headers['transfer-encoding'] !== undefined ||
    (length !== undefined && Number(length) > UNREAD_BODY_READ_BYTES)
  )
}

/** 404: no operation at that method and URL. */
function routeNotFound(method: string, url: string): ApiError {
  const path = url.split('?')[0] ?? ''
  return new ApiError('route_not_found', `no operation at ${method} ${path.slice(0, 200)}`)
}

/** 405 (RFC 9110 §15.5.6): the path serves other methods, which `Allow` lists (empty: none). */
export function methodNotAllowed(method: string, allow: string): ApiError {
  return new ApiError('method_not_allowed', `${method} is not allowed here; allowed: ${allow || 'none'}`, {
    allow,
  })
}

export function handleRouteNotFound(request: FastifyRequest, reply: FastifyReply): void {
  handleError(routeNotFound(request.method, request.url), request, reply)
}

// What every answer carries (request-lifecycle.ts sets them on Fastify's), those made below it included.
const HEADERS_OF_EVERY_ANSWER = { 'x-content-type-options': 'nosniff', 'cache-control': 'no-store' }

/**
 * A whole HTTP/1.1 error response, for the few errors answered on the raw socket, with the headers every
 * answer carries (Node adds `Date` to its own; RFC 9110 §6.6.1 asks for it on every 4xx and 5xx).
 */
function rawResponse(apiError: ApiError, headers: Record<string, string> = {}): string {
  const body = apiError.toJson()
  const extra = Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('')
  return (
    `HTTP/1.1 ${apiError.statusCode} ${STATUS_CODES[apiError.statusCode]}\r\n` +
    `Date: ${new Date().toUTCString()}\r\n` +
    Object.entries(HEADERS_OF_EVERY_ANSWER)
      .map(([name, value]) => `${name}: ${value}\r\n`)
      .join('') +
    `Content-Type: application/json; charset=utf-8\r\n${extra}` +
    `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`
  )
}

// How long a client is given to read an answer and close after the server ended the connection.
const READ_BEFORE_CLOSE_MS = 1000

/**
 * Ends the connection (after `bytes`, if any), then lets go of it a moment later whatever the client does:
 * a client that never closes its side would otherwise keep the socket, and its MAX_CONNECTIONS slot, for
 * good. `end` first rather than `destroy`, so that a reset does not discard the answer before it is read.
 */
function closeConnection(socket: Duplex, bytes?: string): void {
  socket.end(bytes)
  const letGo = setTimeout(() => socket.destroy(), READ_BEFORE_CLOSE_MS)
  letGo.unref()
  socket.once('close', () => clearTimeout(letGo))
}

/**
 * Node's own close of `socket` after its answer with `Connection: close` (`destroySoon`), made a lingering
 * one, for the drain's 503s: reading stops, the end is sent, and the socket is let go after the grace (or
 * once closed). Node destroyed it as soon as the end was sent, and requests a pipelining client sent
 * meanwhile drew a reset from the kernel, which made the client drop the 503 unread. Only while draining:
 * a paused socket does not see the client close, so each lingers the whole grace.
 */
export function lingerOnClose(socket: Socket): void {
  socket.destroySoon = function lingeringClose(this: Socket) {
    this.pause()
    closeConnection(this)
  }
}

const latestRequests = new WeakMap<Socket | Duplex, IncomingMessage>()

/** The parser's errors by code, in our words (Node's own answers: 408, 431, 413, else 400). */
const PARSER_REFUSALS = new Map<string | undefined, () => ApiError>([
  ['ERR_HTTP_REQUEST_TIMEOUT', () => new ApiError('request_timeout', 'the request was not received in time')],
  [
    'HPE_HEADER_OVERFLOW',
    () => new ApiError('headers_too_large', 'the request line and headers are too large'),
  ],
  [
    'HPE_CHUNK_EXTENSIONS_OVERFLOW',
    () => new ApiError('body_too_large', 'the chunk extensions of the request body are too large'),
  ],
])
const NOT_HTTP = () => new ApiError('bad_request', 'the request is not valid HTTP/1.1')

/** Remembers each connection's latest request, so a parser error can tell whose bytes it was reading. */
export function trackLatestRequests(server: {
  on(event: 'request', listener: (request: IncomingMessage) => void): unknown
}) {
  server.on('request', (request: IncomingMessage) => latestRequests.set(request.socket, request))
}

/**
 * Errors Node's HTTP parser raises before Fastify sees a request (bad framing, oversized headers, slow
 * clients): answered on the raw socket, in the same Error body, then the connection is closed — unless the
 * answer to an earlier, complete request on this connection is still being produced: writing now would
 * hide the answer to a request that may have changed data, so that answer is let finish first.
 */
export function handleClientError(
  error: Error & { code?: string; rawPacket?: unknown },
  socket: Socket,
  record?: RecordRawRefusal,
): void {
  if (error.code === 'ECONNRESET' || socket.destroyed || !socket.writable) {
    socket.destroy()
    return
  }
  // A request gets one answer. If the one the parser is on was already answered (or is being answered)
  // — a 404 or 401 sent before its body was read, whose framing then breaks — the connection is only
  // closed once that answer is out: a second answer would be taken by the client, or a proxy reusing the
  // connection, as the answer to its next request. A complete earlier request whose answer is still being
  // produced is let finish too. Only a request nobody answered yet (a slow or broken body, or a new
  // request's head) gets the error response.
  const inFlight = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage
  if (inFlight && (inFlight.req?.complete || inFlight.headersSent)) {
    inFlight.once('finish', () => closeConnection(socket))
    return
  }
  const latest = latestRequests.get(socket)
  if (!inFlight && latest !== undefined && !latest.complete) {
    socket.destroy()
    return
  }
  const apiError = (PARSER_REFUSALS.get(error.code) ?? NOT_HTTP)()
  // A request whose head was read (its body too slow) keeps its id; one whose head was not gets a new one.
  const request = inFlight?.req
  const reqId = request === undefined ? randomRequestId() : requestIdOf(request)
  closeConnection(socket, rawResponse(apiError, { 'X-Request-Id': reqId }))
  record?.(
    request === undefined
      ? { error: apiError, reqId, remoteAddress: socket.remoteAddress, ...requestLineOf(error.rawPacket) }
      : refusalOf(apiError, reqId, request),
  )
}

/** `Expect` values other than 100-continue (Node would answer a bare 417). */
export function handleUnmetExpectation(
  request: IncomingMessage,
  response: ServerResponse,
  record?: RecordRawRefusal,
): void {
  const apiError = new ApiError('expectation_failed', `Expect: ${request.headers.expect} is not supported`)
  const body = apiError.toJson()
  const reqId = requestIdOf(request)
  response.writeHead(apiError.statusCode, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    'x-request-id': reqId,
    ...HEADERS_OF_EVERY_ANSWER,
    connection: 'close',
  })
  response.end(body)
  record?.(refusalOf(apiError, reqId, request))
}

/** CONNECT's answer at `url`: its path read as the router reads another method's (decodeURI's rule). */
function connectRefusal(url: string, allowAt: (path: string) => string | undefined): ApiError {
  if (!url.startsWith('/')) return methodNotAllowed('CONNECT', '')
  let path: string
  try {
    path = decodeURI(url.split(/[?#]/, 1)[0] as string)
  } catch {
    return BAD_URL()
  }
  const allow = allowAt(path)
  return allow === undefined ? routeNotFound('CONNECT', url) : methodNotAllowed('CONNECT', allow)
}

/** What the line of a request answered below the framework says, its head read. */
function refusalOf(error: ApiError, reqId: string, request: IncomingMessage): RawRefusal {
  return {
    error,
    reqId,
    method: request.method,
    url: request.url,
    remoteAddress: request.socket.remoteAddress,
  }
}

/**
 * CONNECT, which no path here serves (Node would drop the connection without a word): on a path of this
 * API, 405 with the methods it does serve (`allowAt`); on another path, 404 as any method gets there; on
 * a host and port, as a proxy is asked, 405 with an empty Allow: that target allows no method here.
 */
export function handleConnect(
  request: IncomingMessage,
  socket: Duplex,
  allowAt: (path: string) => string | undefined,
  record?: RecordRawRefusal,
): void {
  // Node takes its own error listener off a socket it hands to 'connect': a client's reset would be thrown.
  socket.on('error', () => socket.destroy())
  const url = request.url ?? ''
  const apiError = connectRefusal(url, allowAt)
  const reqId = requestIdOf(request)
  closeConnection(socket, rawResponse(apiError, { ...apiError.headers, 'X-Request-Id': reqId }))
  record?.(refusalOf(apiError, reqId, request))
}
