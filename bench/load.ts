import { readFileSync } from 'node:fs'
import { createHistogram } from 'node:perf_hooks'
import autocannon from 'autocannon'
import { cpuTimeUs } from './process-stats.ts'
import type { LoadRequest } from './scenarios.ts'

/**
 * The load generator, run as its own process (pinned to its own core) so it never competes with the
 * server for CPU inside one event loop. Input: one JSON `LoadSpec` argument. Output: one JSON `LoadResult`
 * line on stdout.
 */
export interface LoadSpec {
  origin: string
  /** The server's process: its CPU time (and its descendants') is read around the measured run. */
  serverPid: number
  requests: LoadRequest[]
  expectedStatuses: number[]
  connections: number
  warmupS: number
  durationS: number
}

export interface LoadResult {
  /** Every response, whatever its status. */
  requests: number
  /** Every response of the warm-up and the measured run together (each one a request log line). */
  totalRequests: number
  durationS: number
  /** Responses with an expected status only: a fast 429 or 503 must not pass for throughput. */
  requestsPerSecond: number
  latencyMs: { p50: number; p99: number; p999: number; max: number }
  statusCounts: Record<string, number>
  /** Responses whose status is not one the scenario expects. */
  unexpectedStatus: number
  /** Connection errors and timeouts: requests that got no response at all. */
  socketErrors: number
  /** The server's CPU time over the measured run, per response. */
  serverCpuUsPerRequest: number
  /**
   * CPU time over wall time in the measured run, the server's and the load generator's own: a load
   * generator near 1 may have set the pace instead of the server.
   */
  busy: { server: number; load: number }
  /**
   * The idle share of the load generator's core in the measured run, when it is pinned to one: the kernel's
   * work for its packets runs there too, so the core can be full while the process is not.
   */
  loadCoreIdle: number | undefined
}

interface Measured {
  result: autocannon.Result
  latenciesUs: ReturnType<typeof createHistogram>
  statusCounts: Map<number, number>
}

// Unique over every run of a bench: the time this process started, its pid and a count.
const KEY_PREFIX = `${Date.now().toString(36)}-${process.pid}-`
let keysMade = 0

/** The request as autocannon takes it; one asking for fresh keys gets a new Idempotency-Key each time. */
function withFreshKeys({ freshIdempotencyKey, ...request }: LoadRequest): autocannon.Request {
  if (!freshIdempotencyKey) return request
  return {
    ...request,
    setupRequest: (sent: autocannon.Request) => ({
      ...sent,
      headers: { ...sent.headers, 'idempotency-key': `${KEY_PREFIX}${keysMade++}` },
    }),
  }
}

function run(spec: LoadSpec, durationS: number): Promise<Measured> {
  // Our own histogram and status counts: autocannon keeps latencies in whole milliseconds and only for 2xx,
  // which hides sub-millisecond differences and the whole `unauthorized` scenario.
  const latenciesUs = createHistogram()
  const statusCounts = new Map<number, number>()
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url: spec.origin,
        connections: spec.connections,
        duration: durationS,
        requests: spec.requests.map(withFreshKeys),
        timeout: 10,
      },
      (error, result) => (error ? reject(error) : resolve({ result, latenciesUs, statusCounts })),
    )
    instance.on('response', (_client, statusCode, _bytes, responseTimeMs) => {
      latenciesUs.record(Math.max(1, Math.round(responseTimeMs * 1000)))
      statusCounts.set(statusCode, (statusCounts.get(statusCode) ?? 0) + 1)
    })
  })
}

const toMs = (us: number) => Math.round(us) / 1000

/** The one core this process may run on (the bench pins it with taskset), if it is one. */
function pinnedCore(): number | undefined {
  const allowed = /^Cpus_allowed_list:\s*(\d+)$/m.exec(readFileSync('/proc/self/status', 'utf8'))
  return allowed ? Number(allowed[1]) : undefined
}

/** A core's idle ticks (idle and waiting for I/O) and all its ticks so far, from /proc/stat. */
function coreTicks(core: number): { idle: number; total: number } {
  const line = new RegExp(`^cpu${core} (.*)$`, 'm').exec(readFileSync('/proc/stat', 'utf8'))
  const ticks = (line?.[1] ?? '').trim().split(/\s+/).map(Number)
  // user nice system idle iowait irq softirq steal (guest time is already counted in user).
  const total = ticks.slice(0, 8).reduce((sum, value) => sum + value, 0)
  return { idle: (ticks[3] ?? 0) + (ticks[4] ?? 0), total }
}

async function main(): Promise<void> {
  const spec = JSON.parse(process.argv[2] ?? '') as LoadSpec
  // A separate warm-up run: JIT, connection pools and caches settle on both sides before anything counts.
  const warmup = await run(spec, spec.warmupS)
  const cpuBefore = cpuTimeUs(spec.serverPid)
  const ownBefore = process.cpuUsage()
  const core = pinnedCore()
  const idleBefore = core === undefined ? undefined : coreTicks(core)
  const startedMs = performance.now()
  const { result, latenciesUs, statusCounts } = await run(spec, spec.durationS)
  const wallUs = (performance.now() - startedMs) * 1000
  const serverCpuUs = cpuTimeUs(spec.serverPid) - cpuBefore
  const own = process.cpuUsage(ownBefore)
  const idleAfter = core === undefined ? undefined : coreTicks(core)
  let requests = 0
  let unexpectedStatus = 0
  for (const [status, count] of statusCounts) {
    requests += count
    if (!spec.expectedStatuses.includes(status)) unexpectedStatus += count
  }
  const output: LoadResult = {
    requests,
    totalRequests: requests + [...warmup.statusCounts.values()].reduce((sum, count) => sum + count, 0),
    durationS: result.duration,
    requestsPerSecond: (requests - unexpectedStatus) / result.duration,
    latencyMs: {
      p50: toMs(latenciesUs.percentile(50)),
      p99: toMs(latenciesUs.percentile(99)),
      p999: toMs(latenciesUs.percentile(99.9)),
      max: toMs(latenciesUs.max),
    },
    statusCounts: Object.fromEntries([...statusCounts].map(([status, count]) => [String(status), count])),
    unexpectedStatus,
    socketErrors: result.errors,
    serverCpuUsPerRequest: serverCpuUs / requests,
    busy: { server: serverCpuUs / wallUs, load: (own.user + own.system) / wallUs },
    loadCoreIdle:
      idleBefore === undefined || idleAfter === undefined
        ? undefined
        : (idleAfter.idle - idleBefore.idle) / (idleAfter.total - idleBefore.total),
  }
  process.stdout.write(`${JSON.stringify(output)}\n`)
}

await main()
