import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { isIPv4 } from 'node:net'

/** What can answer a scrape: a registry, or the cluster aggregator in a primary process. */
export interface MetricsSource {
  contentType: string
  metrics(): Promise<string>
}

/** Where metrics are served (`METRICS_HOST`, `METRICS_PORT`). */
export interface MetricsListener {
  host: string
  port: number
}

/**
 * The listener's own bounds, fixed: a scraper sends one short request per interval, and Node's defaults let
 * idle or slow connections take the process's descriptors, and the API's with them (docs/decisions.md,
 * "The metrics listener has bounds of its own").
 */
export const METRICS_LISTENER_LIMITS = {
  maxConnections: 16,
  headersTimeoutMs: 5000,
  requestTimeoutMs: 10_000,
  keepAliveTimeoutMs: 5000,
  /** A scraper that stops reading its answers is let go after this (SEND_TIMEOUT_MS's rule, its default). */
  sendTimeoutMs: 10_000,
} as const

/** What else bounds the listener, given by its caller (http/'s checks, which metrics/ may not import). */
export interface MetricsGuards {
  /** Watches its connections (the API's stalled-send check). */
  connections?: (server: Server) => unknown
  /** Whether a request may be served: not when too many of its connection's wait for their answers. */
  admits?: (request: IncomingMessage, response: ServerResponse) => boolean
  /** Told why a scrape got 500 (collecting failed), which the scraper is not. */
  failed?: (error: unknown) => void
}

/**
 * A listener of its own for `GET /metrics` (and HEAD), on METRICS_HOST (loopback by default): metrics are
 * never served on the API's port, so publishing the API cannot expose them by accident.
 */
export async function startMetricsServer(
  source: MetricsSource,
  { host, port }: MetricsListener,
  { connections, admits, failed }: MetricsGuards = {},
): Promise<Server> {
  const limits = METRICS_LISTENER_LIMITS
  const loopbackOnly = isLoopbackName(host)
  const server = createServer(
    {
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      keepAliveTimeout: limits.keepAliveTimeoutMs,
      connectionsCheckingInterval: 1000,
    },
    (request, response) => {
      // A scraper sends one request at a time: one pipelining thousands would have each computed and held.
      if (admits && !admits(request, response)) {
        const headers = { 'content-type': 'text/plain', connection: 'close', 'retry-after': '1' }
        response.writeHead(503, headers).end('too many requests of this connection wait for their answers\n')
        return
      }
      // Node keeps the first of two Host headers: the second could name any host (RFC 9112 §3.2).
      if ((request.headersDistinct.host?.length ?? 0) > 1) {
        const headers = { 'content-type': 'text/plain', connection: 'close' }
        response.writeHead(400, headers).end('bad request: the Host header is repeated\n')
        return
      }
      // On loopback, only a scraper on this machine is meant: a web page it opens may point a name of its
      // own at 127.0.0.1 (DNS rebinding) and read the metrics (key names, traffic), naming its own host.
      if (loopbackOnly && !namesLoopback(request.headers.host)) {
        const headers = { 'content-type': 'text/plain', connection: 'close' }
        response.writeHead(421, headers).end('misdirected: on loopback, scrape as localhost or 127.0.0.1\n')
        return
      }
      if (request.url?.split('?')[0] !== '/metrics') {
        response.writeHead(404, { 'content-type': 'text/plain' }).end('not found: scrape /metrics\n')
        return
      }
      // HEAD as GET, its body left out by Node: what an uptime probe sends.
      if (request.method !== 'GET' && request.method !== 'HEAD') {
        const headers = { 'content-type': 'text/plain', allow: 'GET, HEAD' }
        response.writeHead(405, headers).end('method not allowed: scrape /metrics with GET\n')
        return
      }
      source.metrics().then(
        (text) => response.writeHead(200, { 'content-type': source.contentType }).end(text),
        (error: unknown) => {
          failed?.(error)
          response.writeHead(500, { 'content-type': 'text/plain' }).end('metrics unavailable\n')
        },
      )
    },
  )
  server.maxConnections = limits.maxConnections
  connections?.(server)
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, host, () => resolve())
  })
  return server
}

/** Whether `name` (a listener's host, a Host header's without its port) is this machine's loopback. */
function isLoopbackName(name: string): boolean {
  const host = name.toLowerCase().replace(/^\[|\]$/g, '')
  if (host === 'localhost' || host.endsWith('.localhost') || host === '::1') return true
  return isIPv4(host) && host.startsWith('127.')
}

/** Whether a request's Host names loopback; none (HTTP/1.0) is let through: a browser always sends one. */
function namesLoopback(host: string | undefined): boolean {
  if (host === undefined) return true
  // The port off: "[::1]:9464", "127.0.0.1:9464", "localhost".
  const name = host.startsWith('[') ? host.slice(0, host.indexOf(']') + 1) : host.replace(/:\d*$/, '')
  return isLoopbackName(name)
}
