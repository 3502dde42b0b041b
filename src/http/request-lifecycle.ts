import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify'
import { serviceUnavailable } from '../errors.ts'
import { clientAddressOf } from '../log/client-address.ts'
import type { Metrics } from '../metrics/metrics.ts'
import { CLIENT_CLOSED_REQUEST, watchAbandoned } from './abandoned-requests.ts'
import { accessLineWriter } from './access-line.ts'
import { SHUTTING_DOWN_CONDITION } from './condition-log.ts'
import { lingerOnClose } from './connection-close.ts'
import { dropContentTypeWithoutBody } from './empty-body.ts'
import { BAD_URL, largeBodyAnnounced } from './error-handler.ts'
import { pinoLoggerOf, serializedBindingsOf } from './lazy-logger.ts'
import { allowedAt } from './method-guard.ts'
import {
  admitPipelined,
  answeredPipelined,
  CLOSED_BEFORE_TURN,
  TOO_MANY_PIPELINED,
  whenItsTurn,
} from './pipelined-requests.ts'
import { MALFORMED_QUERY } from './query-memo.ts'
import { HEADERS_OF_EVERY_ANSWER, handleConnect, handleUnmetExpectation } from './raw-answers.ts'
import type { RecordRawRefusal } from './raw-refusals.ts'
import { expectsContinueAlone, headRefusal } from './request-head.ts'
import { operationOf } from './request-operation.ts'

declare module 'fastify' {
  interface FastifyInstance {
    /** Shutdown has begun: from now on every request is answered 503 with `Connection: close`. */
    refuseRequests(): void
    /** A stop is coming (SHUTDOWN_DELAY_MS): requests are served, readiness says not ready. */
    announceStop(): void
    stopAnnounced(): boolean
  }
}

const SHUTTING_DOWN = () =>
  serviceUnavailable(`${SHUTTING_DOWN_CONDITION}; retry on another instance`, {
    headers: { connection: 'close' },
  })

const COMMON_HEADERS = Object.entries(HEADERS_OF_EVERY_ANSWER)

/**
 * The headers every answer carries: its request id, no content sniffing, and no caching unless a route
 * sets its own policy (answers hold per-key data no shared cache should keep).
 */
export function setCommonHeaders(request: FastifyRequest, reply: FastifyReply): void {
  reply.header('x-request-id', request.id)
  // One by one from pairs: `reply.headers(object)` reads each value by a megamorphic keyed load
  // (docs/decisions.md, "Headers set one by one").
  for (const [name, value] of COMMON_HEADERS) reply.header(name, value)
}

/** Writes the access line of a request's answer, and counts it by operation and status. */
export type AnswerRecorder = (request: FastifyRequest, reply: FastifyReply) => void

export interface RequestLifecycleOptions {
  metrics: Metrics
  /** Operations whose access line is written at debug, not info: health probes, every few seconds. */
  quietOperations?: ReadonlySet<string>
  /** The name of the API key a request was admitted with, if any (admission sets it, after this hook). */
  keyNameOf: (request: FastifyRequest) => string | undefined
  /** Writes the line of, and counts, an answer made below the framework (CONNECT, an unmet Expect). */
  recordRefusal?: RecordRawRefusal
  /** Sets the headers of the operation a request calls (getPet's deprecation) on a refusal made before it. */
  setOperationHeaders?: (request: FastifyRequest, reply: FastifyReply) => void
  /** Whether the app trusts a proxy's X-Forwarded-For (`trustProxy`): if not, `request.ip` is the peer. */
  trustsProxy: boolean
}

/**
 * What every request goes through, one hook at each end (each hook costs a pipeline turn): on arrival the
 * drain and pipelining 503s, the head's refusals, the request id and the headers of every answer; when done,
 * its access line and metrics (docs/decisions.md, "Host and Transfer-Encoding", "Headers of every answer").
 */
export function addRequestLifecycle(
  app: FastifyInstance,
  options: RequestLifecycleOptions,
): { recordWhenAnswered: AnswerRecorder } {
  const {
    metrics,
    quietOperations = new Set(),
    keyNameOf,
    recordRefusal,
    trustsProxy,
    setOperationHeaders,
  } = options
  let closing = false
  // Set by the server's drain before the app closes, or by closing it (tests close the app directly).
  app.decorate('refuseRequests', () => {
    closing = true
  })
  let stopping = false
  app.decorate('announceStop', () => {
    stopping = true
  })
  app.decorate('stopAnnounced', () => stopping || closing)
  app.addHook('preClose', async () => {
    closing = true
  })

  // A request whose client closed the connection before its answer was sent: its line, timed until then.
  const abandoned = watchAbandoned((reply) =>
    record(reply.request, reply, reply.elapsedTime, CLIENT_CLOSED_REQUEST),
  )
  app.addHook('onRequest', (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => {
    abandoned.begun(reply)
    setCommonHeaders(request, reply)
    dropContentTypeWithoutBody(request.raw)
    const socket = request.raw.socket
    if (closing) {
      lingerOnClose(socket)
      return done(SHUTTING_DOWN())
    }
    if (!admitPipelined(socket, reply.raw)) {
      // The client is still sending: its bytes would draw a reset that loses the 503 unread.
      lingerOnClose(socket)
      return done(TOO_MANY_PIPELINED())
    }
    whenItsTurn(socket, reply.raw, (open) =>
      open ? admitHead(request, reply, done) : done(CLOSED_BEFORE_TURN()),
    )
  })
  const admitHead = (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => {
    const refusal = headRefusal(request.raw)
    if (refusal !== undefined) return done(refusal)
    // A body on GET or HEAD is never read (RFC 9110 §9.3.1): a large one would be read and thrown away up
    // to REQUEST_TIMEOUT_MS. The connection ends after the answer instead, as after a refused large body.
    if (!request.raw.complete && bodiless(request.method) && largeBodyAnnounced(request.raw)) {
      reply.header('connection', 'close')
      lingerOnClose(request.raw.socket)
    }
    // Asked to upgrade (never done here), Node reads nothing more of the connection: a request pipelined
    // behind would wait unanswered. The connection ends after this answer, so the client sends it again.
    if (request.headers.upgrade !== undefined) reply.header('connection', 'close')
    // Past the head, the request is its operation's call: its answer carries that operation's headers.
    if (request.query !== MALFORMED_QUERY) return done()
    setOperationHeaders?.(request, reply)
    done(BAD_URL())
  }

  // Decided once per level: below it the line is not even built (building it is most of its cost).
  const appLogger = pinoLoggerOf(app.log)
  const writeAccessLine = accessLineWriter(appLogger, 'info')
  const writeQuietLine = accessLineWriter(appLogger, 'debug')
  // Per operation, then per status: no key string made per request.
  const durations = new Map<string, Map<number, { observe(seconds: number): void }>>()
  const record = (
    request: FastifyRequest,
    reply: FastifyReply,
    elapsedMs: number,
    status = reply.statusCode,
  ): void => {
    const operation = operationOf(request)
    let byStatus = durations.get(operation)
    if (byStatus === undefined) {
      byStatus = new Map()
      durations.set(operation, byStatus)
    }
    let duration = byStatus.get(status)
    if (duration === undefined) {
      duration = metrics.requestDuration.labels({ operation, status: String(status) })
      byStatus.set(status, duration)
    }
    duration.observe(elapsedMs / 1000)
    if (status === 401) metrics.unauthorized.inc()
    const write = quietOperations.has(operation) ? writeQuietLine : writeAccessLine
    write?.({
      reqId: request.id,
      bindings: serializedBindingsOf(request.log),
      method: request.method,
      url: request.url,
      operation,
      status,
      durationMs: elapsedMs,
      code: request.errorCode ?? undefined,
      key: keyNameOf(request),
      remoteAddress: clientAddressOf(request, trustsProxy),
      userAgent: request.headers['user-agent'],
    })
  }
  app.addHook('onResponse', (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => {
    answeredPipelined(request.raw.socket)
    // Read once: each read of elapsedTime reads the clock.
    if (abandoned.answered(reply)) record(request, reply, reply.elapsedTime)
    done()
  })

  app.server.on('checkExpectation', (request, response) =>
    handleUnmetExpectation(request, response, recordRefusal),
  )
  app.server.on('checkContinue', (request, response) =>
    expectsContinueAlone(request)
      ? app.server.emit('request', request, response)
      : handleUnmetExpectation(request, response, recordRefusal),
  )
  app.server.on('connect', (request, socket) =>
    handleConnect(request, socket, (path) => allowedAt(app.server, path), recordRefusal),
  )
  // No hook runs for the router's own errors (a path it cannot decode), and Fastify times none of them:
  // their line is written, and their duration counted, from here to the answer's end (or the client's).
  // Made before routing, its request names the socket's peer, as the HTTP layer's refusals do.
  const recordWhenAnswered: AnswerRecorder = (request, reply) => {
    const started = performance.now()
    reply.raw.once('close', () => record(request, reply, performance.now() - started))
  }
  return { recordWhenAnswered }
}

/** The methods whose body has no meaning, and is never read (RFC 9110 §9.3.1, §9.3.2). */
function bodiless(method: string): boolean {
  return method === 'GET' || method === 'HEAD'
}
