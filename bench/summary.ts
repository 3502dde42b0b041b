import type { CollectionsSeen } from './collection-watch.ts'
import type { LoadResult } from './load.ts'
import type { EngineName } from './options.ts'
import type { ScenarioName } from './scenarios.ts'
import type { LogSink } from './service-output.ts'

/**
 * What a round measures, in the order of its first turn: the service as `npm start` runs it, the same
 * service logging to a pipe the bench drains (with --log-sink both), the same service with request logs
 * off (only with --logs-off), the minimal Fastify app, the bare node:http server.
 */
export const TARGETS = ['service', 'pipe-log', 'logs-off', 'fastify', 'baseline'] as const
export type Target = (typeof TARGETS)[number]

/** Every measured run of one scenario on one engine, in round order; a target not measured has none. */
export interface ScenarioRuns {
  scenario: ScenarioName
  runs: Record<Target, LoadResult[]>
}

export interface EngineRun {
  engine: EngineName
  /** e.g. "SQLite 3.50.4" */
  engineVersion: string
  scenarios: ScenarioRuns[]
  /** The service process's VmHWM at the end of all its scenarios, in KiB. */
  servicePeakRssKiB: number
  serviceLogSink: LogSink
  /** Bytes the service wrote to its standard output (its log) over the whole run, per response. */
  serviceLogBytesPerResponse: number
  /** Warnings and errors the service logged during the run. */
  serviceLog: string
  /** Each serving process's garbage collections, read from its metrics every 10 s. */
  collections: CollectionsSeen[]
}

/** What the report shows of one target: medians over rounds (and the best), errors summed (none may hide in a median). */
export interface TargetSummary {
  requestsPerSecond: number
  /** The fastest round: noise on a shared host only ever slows a run down. */
  bestRequestsPerSecond: number
  p50: number
  p99: number
  p999: number
  unexpectedStatus: number
  socketErrors: number
  cpuUsPerRequest: number
}

// Below this idle share of its core, the load generator, not the server, may have set a run's pace.
export const PACED_BY_LOAD = 0.1

/** Whether the load generator's core was nearly full in `run`: its req/s may be below the server's own. */
export const pacedByLoad = (run: LoadResult) =>
  run.loadCoreIdle !== undefined && run.loadCoreIdle < PACED_BY_LOAD

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  if (sorted.length === 0) return Number.NaN
  return sorted.length % 2 === 1
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2
}

/**
 * The median over the rounds of each round's ratio of `a`'s req/s to `b`'s: turns a slice apart (about a
 * second unless `--slice` says otherwise) in the same round, which a host that speeds up or slows down
 * does not pull apart, as it can the ratio of two medians taken from different rounds.
 */
export function pairedRatio(a: LoadResult[], b: LoadResult[]): number {
  return median(pairedRounds(a, b).map(([x, y]) => x.requestsPerSecond / y.requestsPerSecond))
}

/** Each round's run of `a` with the same round's run of `b`; rounds `b` lacks left out. */
export function pairedRounds(a: LoadResult[], b: LoadResult[]): Array<[LoadResult, LoadResult]> {
  return a.flatMap((run, round) => {
    const other = b[round]
    return other === undefined ? [] : [[run, other]]
  })
}

export function summarize(runs: LoadResult[]): TargetSummary {
  return {
    requestsPerSecond: median(runs.map((run) => run.requestsPerSecond)),
    bestRequestsPerSecond: Math.max(...runs.map((run) => run.requestsPerSecond)),
    p50: median(runs.map((run) => run.latencyMs.p50)),
    p99: median(runs.map((run) => run.latencyMs.p99)),
    p999: median(runs.map((run) => run.latencyMs.p999)),
    unexpectedStatus: runs.reduce((sum, run) => sum + run.unexpectedStatus, 0),
    socketErrors: runs.reduce((sum, run) => sum + run.socketErrors, 0),
    cpuUsPerRequest: median(runs.map((run) => run.serverCpuUsPerRequest)),
  }
}
