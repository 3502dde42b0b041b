import { ENGINE_LABELS } from './engines.ts'
import type { FixedRateResult } from './fixed-rate-load.ts'
import type { LoadResult } from './load.ts'
import {
  type EngineRun,
  median,
  PACED_BY_LOAD,
  pacedByLoad,
  pairedRatio,
  summarize,
  TARGETS,
  type TargetSummary,
} from './summary.ts'

// The report's tables and the note on the load generator's pace: the medians beside both baselines (also
// printed by run-bench.ts), the log on a pipe, and every run (report.ts puts them together).

const integer = (value: number) => Math.round(value).toLocaleString('en-US')
const ms = (value: number) => (value < 10 ? value.toFixed(2) : value.toFixed(1))
const mib = (kib: number) => `${Math.round(kib / 1024)} MiB`
const latencies = (summary: TargetSummary) => `${ms(summary.p50)} / ${ms(summary.p99)} / ${ms(summary.p999)}`
const errors = (summary: TargetSummary) => `${summary.unexpectedStatus} / ${summary.socketErrors}`

function row(cells: string[]): string {
  return `| ${cells.join(' | ')} |`
}

const ratio = (a: number, b: number) => (a / b).toFixed(2)

/** One line per engine and scenario: medians over the rounds, the service next to both baselines. */
export function resultsTable(engineRuns: EngineRun[]): string {
  const withLogsOff = engineRuns.some((run) => run.scenarios.some((s) => s.runs['logs-off'].length > 0))
  const lines = [
    row([
      'Engine',
      'Scenario',
      'Service req/s',
      ...(withLogsOff ? ['Logs off req/s', 'Logs on/off'] : []),
      'Fastify req/s',
      'Bare req/s',
      'Service/bare',
      'Service/Fastify',
      'Service/bare, /Fastify, round by round',
      'Share of bare, best rounds',
      'CPU µs per request, service / Fastify / bare',
      'Service p50 / p99 / p99.9 ms',
      'p99 ms, Fastify / bare',
      'Errors, service / Fastify / bare (status / socket)',
      'Service peak RSS',
    ]),
    row(['---', '---', ...Array<string>(withLogsOff ? 14 : 12).fill('---:')]),
  ]
  for (const engineRun of engineRuns) {
    for (const { scenario, runs } of engineRun.scenarios) {
      const service = summarize(runs.service)
      const fastify = summarize(runs.fastify)
      const bare = summarize(runs.baseline)
      const off = withLogsOff ? summarize(runs['logs-off']) : undefined
      lines.push(
        row([
          ENGINE_LABELS[engineRun.engine],
          scenario,
          integer(service.requestsPerSecond),
          ...(off
            ? [integer(off.requestsPerSecond), ratio(service.requestsPerSecond, off.requestsPerSecond)]
            : []),
          integer(fastify.requestsPerSecond),
          integer(bare.requestsPerSecond),
          ratio(service.requestsPerSecond, bare.requestsPerSecond),
          ratio(service.requestsPerSecond, fastify.requestsPerSecond),
          `${pairedRatio(runs.service, runs.baseline).toFixed(2)} / ${pairedRatio(runs.service, runs.fastify).toFixed(2)}`,
          ratio(service.bestRequestsPerSecond, bare.bestRequestsPerSecond),
          [service, fastify, bare].map((summary) => summary.cpuUsPerRequest.toFixed(1)).join(' / '),
          latencies(service),
          `${ms(fastify.p99)} / ${ms(bare.p99)}`,
          [service, fastify, bare].map(errors).join(', '),
          mib(engineRun.servicePeakRssKiB),
        ]),
      )
    }
  }
  return lines.join('\n')
}

/**
 * With --log-sink both: the service logging to its file (as in the results) beside the same service
 * logging to a pipe the bench drains on the server's core, in the same rounds.
 */
export function logSinkTable(engineRuns: EngineRun[]): string {
  const lines = [
    row([
      'Engine',
      'Scenario',
      'Log to a file, req/s',
      'Log to a pipe, req/s',
      'Pipe/file',
      'Pipe/bare',
      'Pipe/Fastify',
      'CPU µs per request, file / pipe',
      'p99 ms, file / pipe',
    ]),
    row(['---', '---', ...Array<string>(7).fill('---:')]),
  ]
  for (const engineRun of engineRuns) {
    for (const { scenario, runs } of engineRun.scenarios) {
      if (runs['pipe-log'].length === 0) continue
      const [file, pipe, fastify, bare] = [runs.service, runs['pipe-log'], runs.fastify, runs.baseline].map(
        summarize,
      ) as [TargetSummary, TargetSummary, TargetSummary, TargetSummary]
      lines.push(
        row([
          ENGINE_LABELS[engineRun.engine],
          scenario,
          integer(file.requestsPerSecond),
          integer(pipe.requestsPerSecond),
          ratio(pipe.requestsPerSecond, file.requestsPerSecond),
          ratio(pipe.requestsPerSecond, bare.requestsPerSecond),
          ratio(pipe.requestsPerSecond, fastify.requestsPerSecond),
          `${file.cpuUsPerRequest.toFixed(1)} / ${pipe.cpuUsPerRequest.toFixed(1)}`,
          `${ms(file.p99)} / ${ms(pipe.p99)}`,
        ]),
      )
    }
  }
  return lines.length === 2 ? '' : `\n## Log on a pipe\n\n${LOG_SINK_NOTE}\n\n${lines.join('\n')}\n`
}

const LOG_SINK_NOTE = `The same service, its standard output a pipe the bench drains on the server's core (as a log collector
reading it there would), measured in the same rounds as the results above (\`--log-sink both\`). The
reader's CPU time is taken from the service's core and is not in the service's CPU µs per request.`

/** With --fixed-rate: each read scenario's targets at one rate, latency from each request's due time. */
export function fixedRateTable(engineRuns: EngineRun[]): string {
  const lines = [
    row([
      'Engine',
      'Scenario',
      'Rate req/s',
      'Service p50 / p99 / p99.9 ms',
      'p99 ms, Fastify / bare',
      'Service p99 / bare, round by round',
      'Generator send lag p99 ms, service / bare',
      'Errors, all targets (status / socket)',
    ]),
    row(['---', '---', ...Array<string>(6).fill('---:')]),
  ]
  for (const engineRun of engineRuns) {
    for (const { scenario, runs } of engineRun.scenarios) {
      const [service, fastify, bare] = [runs.service, runs.fastify, runs.baseline].map((results) =>
        results.flatMap((result) => (result.fixedRate ? [result.fixedRate] : [])),
      ) as [FixedRateResult[], FixedRateResult[], FixedRateResult[]]
      if (service.length === 0) continue
      const of = (results: FixedRateResult[], pick: (result: FixedRateResult) => number) =>
        median(results.map(pick))
      const p99 = (results: FixedRateResult[]) => of(results, (result) => result.latencyMs.p99)
      const everyTarget = TARGETS.flatMap((target) => runs[target].flatMap((run) => run.fixedRate ?? []))
      const sum = (pick: (result: FixedRateResult) => number) =>
        everyTarget.reduce((total, result) => total + pick(result), 0)
      lines.push(
        row([
          ENGINE_LABELS[engineRun.engine],
          scenario,
          integer(of(service, (result) => result.ratePerS)),
          [50, 99, 999]
            .map((at) => ms(of(service, (result) => result.latencyMs[`p${at}` as 'p50'])))
            .join(' / '),
          `${ms(p99(fastify))} / ${ms(p99(bare))}`,
          service
            .map((result, round) => ratio(result.latencyMs.p99, bare[round]?.latencyMs.p99 ?? Number.NaN))
            .join(' / '),
          `${ms(of(service, (result) => result.sendLagP99Ms))} / ${ms(of(bare, (result) => result.sendLagP99Ms))}`,
          `${sum((result) => result.unexpectedStatus)} / ${sum((result) => result.socketErrors)}`,
        ]),
      )
    }
  }
  return lines.length === 2
    ? ''
    : `\n## Latency at a fixed rate\n\n${FIXED_RATE_NOTE}\n\n${lines.join('\n')}\n`
}

const FIXED_RATE_NOTE = `After each read scenario's measured turns, every target again, at one rate: the given share (\`--fixed-rate\`)
of the slowest target's req/s in that round, for half the measured time, in turns ordered as those, after a
turn each not counted. Requests are sent on a schedule whatever the server's pace (an open loop), and each
one's latency counts from the time it was due to its answer (or its failure), so a stall is charged for
every request it held back, which a closed-loop generator such as autocannon, sending nothing while its
connections wait, never sends (coordinated omission). Medians over the rounds. The generator's send lag
(how late it sent a request) is in every latency; a round where it reached half the bare server's p99 is
set aside in the targets.`

const busy = (run: LoadResult) =>
  `${run.busy.server.toFixed(2)} / ${run.busy.load.toFixed(2)}` +
  (run.loadCoreIdle === undefined ? '' : ` (${run.loadCoreIdle.toFixed(2)})`)

/** Which targets' runs left the load generator's core nearly full, if any did. */
export function loadPacingNote(engineRuns: EngineRun[]): string {
  const counts = TARGETS.map((target) => {
    const runs = engineRuns.flatMap((run) => run.scenarios.flatMap((scenario) => scenario.runs[target]))
    const paced = runs.filter(pacedByLoad)
    return { target, paced: paced.length, of: runs.length }
  }).filter(({ paced }) => paced > 0)
  if (counts.length === 0) return ''
  const listed = counts.map(({ target, paced, of }) => `${target} ${paced} of ${of}`).join(', ')
  return (
    `\nThe load generator's core was less than ${PACED_BY_LOAD * 100} % idle in some runs (${listed}; ` +
    'the kernel works for its packets there too): in those the load generator may have set the pace, and ' +
    "the req/s may be below what the server can do; for a baseline, that makes the service's share look " +
    'higher. ' +
    'The busy shares of each run are under "Every run".\n'
  )
}

const atFixedRate = (fixed: FixedRateResult | undefined) =>
  fixed === undefined
    ? '—'
    : `${integer(fixed.ratePerS)}, ${ms(fixed.latencyMs.p99)} / ${ms(fixed.latencyMs.max)} (${ms(fixed.sendLagP99Ms)})`

/** Every run, so a median can be checked against what it summarizes. */
export function runsTable(engineRuns: EngineRun[]): string {
  const lines = [
    row([
      'Engine',
      'Scenario',
      'Round',
      'Target',
      'req/s',
      'CPU µs per request',
      'p50 / p99 / p99.9 ms',
      'max ms',
      'Busy, server / load generator (its core idle)',
      'statuses',
      'At a fixed rate: req/s, p99 / max ms (send lag p99)',
    ]),
    row(['---', '---', '---:', '---', '---:', '---:', '---:', '---:', '---:', '---', '---:']),
  ]
  for (const engineRun of engineRuns) {
    for (const { scenario, runs } of engineRun.scenarios) {
      runs.service.forEach((_service, round) => {
        for (const target of TARGETS) {
          const run = runs[target][round]
          if (run === undefined) continue
          const { p50, p99, p999, max } = run.latencyMs
          const statuses = Object.entries(run.statusCounts)
            .map(([status, count]) => `${status}×${count}`)
            .join(', ')
          const cells = [ENGINE_LABELS[engineRun.engine], scenario, String(round + 1), target]
          lines.push(
            row([
              ...cells,
              integer(run.requestsPerSecond),
              run.serverCpuUsPerRequest.toFixed(1),
              `${ms(p50)} / ${ms(p99)} / ${ms(p999)}`,
              ms(max),
              busy(run),
              `${statuses}${run.socketErrors ? `, socket errors×${run.socketErrors}` : ''}`,
              atFixedRate(run.fixedRate),
            ]),
          )
        }
      })
    }
  }
  return lines.join('\n')
}
