import { Counter, collectDefaultMetrics, Gauge, Registry } from 'prom-client'
import { droppedLogLines, type LogStream } from '../log/standard-streams.ts'
import type { PoolStats } from '../store/store.ts'
import { DurationHistogram } from './duration-histogram.ts'

// Both duration histograms' buckets, in seconds. From 0.1 ms: a read from the cache takes a few tenths of
// one, and a rise there must show; each at most 2.5 times the last. Up to 10 s: an answer waits on the
// store up to its bounds (PostgreSQL's, 8 s by default).
const DURATION_BUCKETS = [
  0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
]

/**
 * The service's Prometheus metrics, in a registry of its own (so tests and workers never share one).
 * Besides these: process and Node.js metrics, event-loop delay included (prom-client defaults).
 */
export function createMetrics(poolStats?: () => PoolStats) {
  const registry = new Registry()
  collectDefaultMetrics({ register: registry })
  // Counted here and added to the counter when metrics are read: a labelled increment per call (label
  // checks and hashing) costs measurably more (docs/decisions.md, "Per-request cost").
  const deprecatedCallsSinceRead = new Map<string, Map<string, number>>()
  const metrics = {
    registry,
    requestDuration: new DurationHistogram({
      name: 'petstore_http_request_duration_seconds',
      help: 'Time to answer a request, by operation and status.',
      labelNames: ['operation', 'status'] as const,
      buckets: DURATION_BUCKETS,
      registers: [registry],
    }),
    petsCreated: new Counter({
      name: 'petstore_pets_created_total',
      help: 'Pets created (idempotent replays not counted).',
      registers: [registry],
    }),
    refusedByHttp: new Counter({
      name: 'petstore_http_refused_total',
      help: 'Requests answered before reaching an operation (not valid HTTP/1.1, too slow, too large a head, CONNECT or a method the parser does not know, an unsupported Expect), by status.',
      labelNames: ['status'] as const,
      registers: [registry],
    }),
    rateLimitUncounted: new Counter({
      name: 'petstore_rate_limit_uncounted_total',
      help: 'Requests served without a rate-limit count because the shared counter (Redis) failed: the limit failing open.',
      registers: [registry],
    }),
    unauthorized: new Counter({
      name: 'petstore_unauthorized_total',
      help: 'Requests refused with 401.',
      registers: [registry],
    }),
    deprecatedCalls: new Counter({
      name: 'petstore_deprecated_calls_total',
      help: 'Calls of deprecated operations, by operation and API key name.',
      labelNames: ['operation', 'key'] as const,
      registers: [registry],
      collect() {
        for (const [operation, byKey] of deprecatedCallsSinceRead) {
          for (const [key, calls] of byKey) this.inc({ operation, key }, calls)
        }
        deprecatedCallsSinceRead.clear()
      },
    }),
    storeDuration: new DurationHistogram({
      name: 'petstore_store_duration_seconds',
      help: 'Time the store took, by store operation and outcome.',
      labelNames: ['operation', 'outcome'] as const,
      buckets: DURATION_BUCKETS,
      registers: [registry],
    }),
  }
  /** Counts one call of a deprecated operation by the API key named `key`. */
  function countDeprecatedCall(operation: string, key: string): void {
    let byKey = deprecatedCallsSinceRead.get(operation)
    if (byKey === undefined) {
      byKey = new Map()
      deprecatedCallsSinceRead.set(operation, byKey)
    }
    byKey.set(key, (byKey.get(key) ?? 0) + 1)
  }
  countDroppedLogLines(registry)
  if (poolStats) countPoolConnections(registry, poolStats)
  return { ...metrics, countDeprecatedCall }
}

export type Metrics = ReturnType<typeof createMetrics>

/**
 * The pool's connections by state, which add up to those open (a sum over `state` is meaningful), and
 * apart from them the calls waiting for one: a pool at its size with calls waiting is the one to watch.
 */
function countPoolConnections(registry: Registry, poolStats: () => PoolStats): void {
  new Gauge({
    name: 'petstore_store_connections',
    help: 'Database connections this instance holds open, by state: busy (running a call, or being opened) or idle.',
    labelNames: ['state'] as const,
    registers: [registry],
    collect() {
      const { total, idle } = poolStats()
      this.set({ state: 'busy' }, total - idle)
      this.set({ state: 'idle' }, idle)
    },
  })
  new Gauge({
    name: 'petstore_store_waiting_calls',
    help: 'Store calls of this instance waiting for a database connection (every one is busy).',
    registers: [registry],
    collect() {
      this.set(poolStats().waiting)
    },
  })
}

/**
 * `petstore_ready`: 1 while /readyz would answer 200, checked at each scrape (`ready`), else 0. Under
 * WORKERS the least of the workers': 1 only while every one is ready.
 */
export function gaugeReadiness(registry: Registry, ready: () => Promise<boolean>): void {
  new Gauge({
    name: 'petstore_ready',
    help: 'Whether this instance is ready (what /readyz answers, checked at each scrape): 1 ready, 0 not.',
    registers: [registry],
    aggregator: 'min',
    async collect() {
      this.set((await ready()) ? 1 : 0)
    },
  })
}

/**
 * `petstore_build_info`: always 1, labelled with what runs, so that a dashboard tells releases apart during
 * a rolling deploy. Under WORKERS one sample, the first worker's: they all run the supervisor's release.
 */
export function gaugeBuildInfo(registry: Registry, build: { version: string; apiVersion: string }): void {
  new Gauge({
    name: 'petstore_build_info',
    help: 'Always 1: the labels name the service release, the API version it serves and the Node.js that runs it.',
    labelNames: ['version', 'api_version', 'nodejs'] as const,
    registers: [registry],
    aggregator: 'first',
  }).set({ version: build.version, api_version: build.apiVersion, nodejs: process.version }, 1)
}

/** The log lines (standard output) this process dropped, in `registry` (a supervisor adds its workers'). */
export function countDroppedLogLines(registry: Registry): void {
  droppedLinesCounter(registry, 'stdout', {
    name: 'petstore_log_lines_dropped_total',
    help: 'Log lines dropped because standard output did not keep up (or was closed).',
  })
}

/** In a supervisor: the lines of its workers' output it could not pass on to standard error. */
export function countDroppedWorkerOutput(registry: Registry): void {
  droppedLinesCounter(registry, 'stderr', {
    name: 'petstore_worker_output_lines_dropped_total',
    help: "Lines of workers' output (not their log) dropped because standard error did not keep up.",
  })
}

/**
 * Why a WORKERS supervisor replaced a worker: it died, stopped alone, stopped answering (and was killed),
 * or, a replacement, exited before it listened (its store could not be opened: a database outage).
 */
export type WorkerRestartCause = 'died' | 'stopped' | 'unresponsive' | 'not_started'

/** In a supervisor: the workers it replaced, by cause (each cause at 0 from the start, for `rate()`). */
export function countWorkerRestarts(registry: Registry): Counter<'cause'> {
  const restarts = new Counter({
    name: 'petstore_worker_restarts_total',
    help: 'Workers replaced, by cause: died (a crash, a kill), stopped (a stop signal sent to it alone), unresponsive (killed after WORKER_LIVENESS_TIMEOUT_MS unanswered), not_started (a replacement that exited before it listened: its store could not be opened, as in a database outage).',
    labelNames: ['cause'] as const,
    registers: [registry],
  })
  for (const cause of ['died', 'stopped', 'unresponsive', 'not_started'] satisfies WorkerRestartCause[]) {
    restarts.labels(cause).inc(0)
  }
  return restarts
}

function droppedLinesCounter(
  registry: Registry,
  stream: LogStream,
  { name, help }: { name: string; help: string },
) {
  let reported = 0
  new Counter({
    name,
    help,
    registers: [registry],
    collect() {
      const dropped = droppedLogLines(stream)
      this.inc(dropped - reported)
      reported = dropped
    },
  })
}
