import { type IncomingMessage, type ServerResponse, STATUS_CODES } from 'node:http'
import type { Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import { ApiError } from '../errors.ts'
import { answeredRaw } from './abandoned-requests.ts'
import { closeConnection } from './connection-close.ts'
import { answerBody, BAD_URL, methodNotAllowed, routeNotFound } from './error-handler.ts'
import { overlongRequestLine, type RawRefusal, type RecordRawRefusal, requestLineOf } from './raw-refusals.ts'
import { targetTooLong } from './request-head.ts'
import { randomRequestId, requestIdOf } from './request-id.ts'

// Answers made below the framework, on the raw socket: a request the parser refused, an unmet `Expect`,
// CONNECT. Each carries what every answer does and the Error body, and closes its connection.

// What every answer carries, Fastify's (request-lifecycle.ts) and those made below it; frozen, made once.
export const HEADERS_OF_EVERY_ANSWER = Object.freeze({
  'x-content-type-options': 'nosniff',
  'cache-control': 'no-store',
})

/**
 * A whole HTTP/1.1 error response, for the few errors answered on the raw socket, with the headers every
 * answer carries (Node adds `Date` to its own; RFC 9110 §6.6.1 asks for it on every 4xx and 5xx).
 */
function rawResponse(apiError: ApiError, headers: Record<string, string> = {}): string {
  const body = answerBody(apiError)
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

/**
 * The latest request the connection's parser read (Node keeps it as `parser.incoming` until the next one's
 * head), so that a parser error can tell whose bytes it was reading; no listener per request needed.
 */
function latestRequestOf(socket: Socket): IncomingMessage | undefined {
  return (
    (socket as Socket & { parser?: { incoming?: IncomingMessage | null } | null }).parser?.incoming ??
    undefined
  )
}

/** The parser's errors by code, in our words (Node's own answers: 408, 431, 413, else 400). */
const PARSER_REFUSALS = new Map<string | undefined, () => ApiError>([
  ['ERR_HTTP_REQUEST_TIMEOUT', () => new ApiError('request_timeout', 'the request was not received in time')],
  [
    'HPE_HEADER_OVERFLOW',
    () => new ApiError('headers_too_large', 'the request line and headers are too large'),
  ],
  // The client ended its side mid-body: it may be gone, or half-closed and reading on, and is told why.
  [
    'HPE_INVALID_EOF_STATE',
    () => new ApiError('bad_request', 'the connection ended before the request body was complete'),
  ],
  [
    'HPE_CHUNK_EXTENSIONS_OVERFLOW',
    () => new ApiError('body_too_large', 'the chunk extensions of the request body are too large'),
  ],
])
// The parser's reason is one of its own fixed phrases ("Duplicate Content-Length"), never the client's bytes.
const PARSER_REASON = /^[\w .,'`/-]{1,100}$/
const NOT_HTTP = (reason?: string) =>
  new ApiError(
    'bad_request',
    reason !== undefined && PARSER_REASON.test(reason)
      ? `the request is not valid HTTP/1.1: ${reason}`
      : 'the request is not valid HTTP/1.1',
  )

/**
 * The bytes the parser held (Node gives a Buffer; Fastify's types say otherwise), when they start with
 * the request it refused: not when a head ends before the point it failed, as an earlier request's does
 * when it came in the same read (answered already, it would be named instead).
 */
function refusedRequestBytes({ rawPacket, bytesParsed }: { rawPacket?: unknown; bytesParsed?: number }) {
  if (!Buffer.isBuffer(rawPacket)) return undefined
  const failedAt = typeof bytesParsed === 'number' ? bytesParsed : rawPacket.length
  return rawPacket.subarray(0, failedAt).includes('\r\n\r\n') ? undefined : rawPacket
}

/**
 * Errors Node's HTTP parser raises before Fastify sees a request: answered on the raw socket in the same
 * Error body, then the connection closed, after any earlier request's answer (docs/decisions.md, "Errors").
 */
export function handleClientError(
  error: Error & { code?: string; reason?: string; rawPacket?: unknown; bytesParsed?: number },
  socket: Socket,
  record?: RecordRawRefusal,
  allowAt?: (path: string) => string | undefined,
): void {
  if (error.code === 'ECONNRESET' || socket.destroyed || !socket.writable) {
    socket.destroy()
    return
  }
  // A request gets one answer: one already answered, or a complete earlier one still being answered, is let
  // finish and the connection then closed, or the client would take a second answer for its next request's
  // (docs/decisions.md, "Errors"). Only a request nobody answered yet (a broken body, a new head) gets ours.
  const inFlight = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage
  if (inFlight && (inFlight.req?.complete || inFlight.headersSent)) {
    inFlight.once('finish', () => closeConnection(socket))
    return
  }
  const latest = latestRequestOf(socket)
  if (!inFlight && latest !== undefined && !latest.complete) {
    socket.destroy()
    return
  }
  const packet = refusedRequestBytes(error)
  // The head's limit counts the request line too: a line that alone is over it is a target too long.
  const overlong = error.code === 'HPE_HEADER_OVERFLOW' ? overlongRequestLine(packet) : undefined
  const apiError =
    overlong !== undefined
      ? targetTooLong()
      : (unknownMethodRefusal(error.code, packet, allowAt) ??
        PARSER_REFUSALS.get(error.code)?.() ??
        NOT_HTTP(error.reason))
  // A request whose head was read (its body too slow) keeps its id; one whose head was not gets a new one.
  const request = inFlight?.req
  const reqId = request === undefined ? randomRequestId() : requestIdOf(request)
  // Read before the close: a socket its client already ended is destroyed by it, and forgets its peer.
  const refusal =
    request === undefined
      ? {
          error: apiError,
          reqId,
          remoteAddress: socket.remoteAddress,
          ...(overlong ?? requestLineOf(packet)),
        }
      : refusalOf(apiError, reqId, request)
  // Its line is this refusal's: the close that follows gives nothing up.
  if (inFlight) answeredRaw(inFlight)
  closeConnection(socket, rawResponse(apiError, { ...apiError.headers, 'X-Request-Id': reqId }))
  record?.(refusal)
}

/** `Expect` values other than 100-continue (Node would answer a bare 417). */
export function handleUnmetExpectation(
  request: IncomingMessage,
  response: ServerResponse,
  record?: RecordRawRefusal,
): void {
  const apiError = new ApiError('expectation_failed', `Expect: ${request.headers.expect} is not supported`)
  const body = answerBody(apiError)
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

/**
 * The answer to `method` at `url`, a method no route serves (CONNECT, or one Node's parser does not know):
 * its path read as the router reads another method's (decodeURI's rule), 405 with what it serves, or 404.
 */
function methodRefusal(method: string, url: string, allowAt: (path: string) => string | undefined): ApiError {
  if (!url.startsWith('/')) return methodNotAllowed(method, '')
  let path: string
  try {
    path = decodeURI(url.split(/[?#]/, 1)[0] as string)
  } catch {
    return BAD_URL()
  }
  const allow = allowAt(path)
  return allow === undefined ? routeNotFound(method, url) : methodNotAllowed(method, allow)
}

/** A method Node's parser refused (an extension, a lowercase `get`) answered as the router answers one. */
function unknownMethodRefusal(
  code: string | undefined,
  packet: Buffer | undefined,
  allowAt: ((path: string) => string | undefined) | undefined,
): ApiError | undefined {
  if (code !== 'HPE_INVALID_METHOD' || allowAt === undefined) return undefined
  const { method, url } = requestLineOf(packet)
  return method === undefined || url === undefined ? undefined : methodRefusal(method, url, allowAt)
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
  const apiError = methodRefusal('CONNECT', url, allowAt)
  const reqId = requestIdOf(request)
  closeConnection(socket, rawResponse(apiError, { ...apiError.headers, 'X-Request-Id': reqId }))
  record?.(refusalOf(apiError, reqId, request))
}
