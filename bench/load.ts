import type { EventEmitter } from 'node:events'
import { readFileSync } from 'node:fs'
import { createHistogram, type RecordableHistogram } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import autocannon from 'autocannon'
import { atFixedRate, type FixedRateResult } from './fixed-rate-load.ts'
import { cpuTimeUs } from './process-stats.ts'
import type { LoadRequest } from './scenarios.ts'
import { turnsOf } from './turns.ts'

/**
 * The load generator, run as its own process (pinned to its own core) so it never competes with the
 * server for CPU inside one event loop. Input: one JSON `LoadSpec` argument. Output: one JSON line on
 * stdout, a `LoadResult` per target, in the spec's order.
 */
export interface LoadTarget {
  origin: string
  /** The server's process: its CPU time (and its descendants') is read around each measured turn. */
  serverPid: number
}

export interface LoadSpec {
  /** Every server one round measures on one scenario, loaded in turns. */
  targets: LoadTarget[]
  requests: LoadRequest[]
  expectedStatuses: number[]
  connections: number
  warmupS: number
  /** Measured seconds per target, over all its turns. */
  durationS: number
  /** About how long one turn is: the targets take turns (turns.ts) until each has had `durationS`. */
  sliceS: number
  /**
   * The pause before each turn and after it, in no one's wall time: what a server still does after its
   * last answer (a log batch's write, its closed connections) is counted in its own CPU time, not in the
   * next one's.
   */
  pauseMs: number
  /** Then latency at a fixed rate, this share of the slowest target's req/s (fixed-rate-load.ts); 0: none. */
  fixedRateShare: number
}

export interface LoadResult {
  /** Every response, whatever its status. */
  requests: number
  /** Every response of the warm-up and the measured turns together (each one a request log line). */
  totalRequests: number
  durationS: number
  /** Responses with an expected status only: a fast 429 or 503 must not pass for throughput. */
  requestsPerSecond: number
  /**
   * Over the responses; `max` also counts each request still unanswered when its turn ended, at its age
   * then: a stall near a turn's end would otherwise leave no trace, as the load generator drops them.
   */
  latencyMs: { p50: number; p99: number; p999: number; max: number }
  statusCounts: Record<string, number>
  /** Responses whose status is not one the scenario expects. */
  unexpectedStatus: number
  /** Connection errors and timeouts: requests that got no response at all. */
  socketErrors: number
  /** The server's CPU time over its measured turns and the pause after each, per response. */
  serverCpuUsPerRequest: number
  /**
   * CPU time over wall time in the measured turns, the server's and the load generator's own: a load
   * generator near 1 may have set the pace instead of the server.
   */
  busy: { server: number; load: number }
  /**
   * The idle share of the load generator's core in the measured turns, when it is pinned to one: the
   * kernel's work for its packets runs there too, so the core can be full while the process is not.
   */
  loadCoreIdle: number | undefined
  /** Latency at a fixed rate, when the spec asked for it. */
  fixedRate?: FixedRateResult
}

/** What one target's turns add up to. */
interface Tally {
  latenciesUs: RecordableHistogram
  statusCounts: Map<number, number>
  warmupResponses: number
  socketErrors: number
  /** The age of the oldest request still unanswered at the end of a turn. */
  oldestUnansweredUs: number
  wallUs: number
  /** The server's CPU time in its turns: over the turns' wall time, how busy it was. */
  serverBusyCpuUs: number
  /** The same and its CPU time in the pause after each turn: what its answers cost. */
  serverCpuUs: number
  ownCpuUs: number
  coreIdle: number
  coreTotal: number
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

interface Run {
  socketErrors: number
  wallUs: number
  /** How long the oldest request unanswered when the load stopped had waited (0 if none). */
  oldestUnansweredUs: number
}

/** Loads one origin for `durationS`, recording each response. */
function run(
  spec: LoadSpec,
  origin: string,
  durationS: number,
  record: (statusCode: number, responseTimeMs: number) => void,
): Promise<Run> {
  const startedMs = performance.now()
  let oldestUnansweredUs = 0
  // One request at a time on each connection (no pipelining): its send time, until it is answered.
  const watchUnanswered = (autocannonClient: autocannon.Client) => {
    // Its type names a few of the events it emits; these are in autocannon's lib/httpClient.js.
    const client: EventEmitter = autocannonClient
    let sentAtMs: number | undefined
    client.on('request', () => {
      sentAtMs = performance.now()
    })
    client.on('response', () => {
      sentAtMs = undefined
    })
    // A timeout is counted as a socket error; the request is given up.
    client.on('timeout', () => {
      sentAtMs = undefined
    })
    // autocannon ends each connection with 'done' when the duration is over, dropping what is in flight.
    client.on('done', () => {
      if (sentAtMs === undefined) return
      oldestUnansweredUs = Math.max(oldestUnansweredUs, (performance.now() - sentAtMs) * 1000)
    })
  }
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url: origin,
        connections: spec.connections,
        duration: durationS,
        requests: spec.requests.map(withFreshKeys),
        timeout: 10,
        // autocannon notices its end only on a sample's tick: a short one ends a short turn on time.
        sampleInt: 50,
        setupClient: watchUnanswered,
      },
      (error, result) =>
        error
          ? reject(error)
          : resolve({
              socketErrors: result.errors,
              wallUs: (performance.now() - startedMs) * 1000,
              oldestUnansweredUs,
            }),
    )
    // Our own histogram and status counts: autocannon keeps latencies in whole milliseconds and only for
    // 2xx, which hides sub-millisecond differences and the whole `unauthorized` scenario.
    instance.on('response', (_client, statusCode, _bytes, responseTimeMs) =>
      record(statusCode, responseTimeMs),
    )
  })
}

/** The one core this process may run on (the bench pins it with taskset), if it is one. */
function pinnedCore(): number | undefined {
  const allowed = /^Cpus_allowed_list:\s*(\d+)$/m.exec(readFileSync('/proc/self/status', 'utf8'))
  return allowed ? Number(allowed[1]) : undefined
}

const PINNED_CORE = pinnedCore()

/** A core's idle ticks (idle and waiting for I/O) and all its ticks so far, from /proc/stat. */
function coreTicks(): { idle: number; total: number } {
  if (PINNED_CORE === undefined) return { idle: 0, total: 0 }
  const line = new RegExp(`^cpu${PINNED_CORE} (.*)$`, 'm').exec(readFileSync('/proc/stat', 'utf8'))
  const ticks = (line?.[1] ?? '').trim().split(/\s+/).map(Number)
  // user nice system idle iowait irq softirq steal (guest time is already counted in user).
  const total = ticks.slice(0, 8).reduce((sum, value) => sum + value, 0)
  return { idle: (ticks[3] ?? 0) + (ticks[4] ?? 0), total }
}

const ownCpuUs = () => {
  const { user, system } = process.cpuUsage()
  return user + system
}

async function warmUp(spec: LoadSpec, target: LoadTarget, tally: Tally): Promise<void> {
  // JIT, connection pools and caches settle on both sides before anything counts.
  await run(spec, target.origin, spec.warmupS, () => {
    tally.warmupResponses++
  })
}

async function measureTurn(spec: LoadSpec, target: LoadTarget, tally: Tally, seconds: number): Promise<void> {
  await sleep(spec.pauseMs)
  const serverBefore = cpuTimeUs(target.serverPid)
  const ownBefore = ownCpuUs()
  const coreBefore = coreTicks()
  const { socketErrors, wallUs, oldestUnansweredUs } = await run(
    spec,
    target.origin,
    seconds,
    (statusCode, responseTimeMs) => {
      tally.latenciesUs.record(Math.max(1, Math.round(responseTimeMs * 1000)))
      tally.statusCounts.set(statusCode, (tally.statusCounts.get(statusCode) ?? 0) + 1)
    },
  )
  const coreAfter = coreTicks()
  const serverAtEnd = cpuTimeUs(target.serverPid)
  tally.ownCpuUs += ownCpuUs() - ownBefore
  tally.coreIdle += coreAfter.idle - coreBefore.idle
  tally.coreTotal += coreAfter.total - coreBefore.total
  tally.socketErrors += socketErrors
  tally.oldestUnansweredUs = Math.max(tally.oldestUnansweredUs, oldestUnansweredUs)
  tally.wallUs += wallUs
  await sleep(spec.pauseMs)
  tally.serverBusyCpuUs += serverAtEnd - serverBefore
  tally.serverCpuUs += cpuTimeUs(target.serverPid) - serverBefore
}

const toMs = (us: number) => Math.round(us) / 1000

function result(spec: LoadSpec, tally: Tally): LoadResult {
  let requests = 0
  let unexpectedStatus = 0
  for (const [status, count] of tally.statusCounts) {
    requests += count
    if (!spec.expectedStatuses.includes(status)) unexpectedStatus += count
  }
  const durationS = tally.wallUs / 1e6
  const { latenciesUs } = tally
  return {
    requests,
    totalRequests: requests + tally.warmupResponses,
    durationS,
    requestsPerSecond: (requests - unexpectedStatus) / durationS,
    latencyMs: {
      p50: toMs(latenciesUs.percentile(50)),
      p99: toMs(latenciesUs.percentile(99)),
      p999: toMs(latenciesUs.percentile(99.9)),
      max: toMs(Math.max(latenciesUs.max, tally.oldestUnansweredUs)),
    },
    statusCounts: Object.fromEntries(
      [...tally.statusCounts].map(([status, count]) => [String(status), count]),
    ),
    unexpectedStatus,
    socketErrors: tally.socketErrors,
    // A target that answered nothing has no cost per answer; its errors say why.
    serverCpuUsPerRequest: requests > 0 ? tally.serverCpuUs / requests : 0,
    busy: { server: tally.serverBusyCpuUs / tally.wallUs, load: tally.ownCpuUs / tally.wallUs },
    loadCoreIdle: PINNED_CORE !== undefined ? tally.coreIdle / tally.coreTotal : undefined,
  }
}

async function main(): Promise<void> {
  const spec = JSON.parse(process.argv[2] ?? '') as LoadSpec
  const tallies: Tally[] = spec.targets.map(() => ({
    latenciesUs: createHistogram(),
    statusCounts: new Map(),
    warmupResponses: 0,
    socketErrors: 0,
    oldestUnansweredUs: 0,
    wallUs: 0,
    serverBusyCpuUs: 0,
    serverCpuUs: 0,
    ownCpuUs: 0,
    coreIdle: 0,
    coreTotal: 0,
  }))
  const order = spec.targets.map((_, at) => at)
  // Warmed up in the reverse order of the first turn (C B A, then A B C), as every turn follows one in the
  // reverse order: the first measured turn's targets have been idle as long as in any later turn.
  for (const at of order.toReversed()) {
    await warmUp(spec, spec.targets[at] as LoadTarget, tallies[at] as Tally)
  }
  // Short turns, in an order reversed every other turn (A B C, C B A, …): the host's noise, which moves
  // over seconds here, lands on every target alike, and a steady drift gives each the same mean place.
  const { count, seconds } = turnsOf(spec.durationS, spec.sliceS)
  for (let turn = 0; turn < count; turn++) {
    for (const at of turn % 2 === 0 ? order : order.toReversed()) {
      await measureTurn(spec, spec.targets[at] as LoadTarget, tallies[at] as Tally, seconds)
    }
  }
  const results = tallies.map((tally) => result(spec, tally))
  const atFixed = await atFixedRate(
    spec,
    results.map((result) => result.requestsPerSecond),
  )
  for (const [at, result] of results.entries()) result.fixedRate = atFixed?.[at]
  process.stdout.write(`${JSON.stringify(results)}\n`)
}

await main()
