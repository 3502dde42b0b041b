import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'

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
 * The listener's own bounds, fixed: a scraper (Prometheus, one per replica of it) sends one short request
 * per interval. Node's defaults (no connection cap, a head may take 60 s) let a few hundred idle or slow
 * connections take the process's descriptors, and with them the API's (docs/decisions.md, "Deployment":
 * the metrics listener's bounds).
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
}

/**
 * A listener of its own for `GET /metrics` (and HEAD), on METRICS_HOST (loopback by default): metrics are
 * never served on the API's port, so publishing the API cannot expose them by accident.
 */
export async function startMetricsServer(
  source: MetricsSource,
  { host, port }: MetricsListener,
  { connections, admits }: MetricsGuards = {},
): Promise<Server> {
  const limits = METRICS_LISTENER_LIMITS
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
        () => response.writeHead(500, { 'content-type': 'text/plain' }).end('metrics unavailable\n'),
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
