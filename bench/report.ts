import { ENGINE_LABELS } from './engines.ts'
import type { LoadResult } from './load.ts'
import type { Environment } from './machine.ts'
import type { BenchOptions } from './options.ts'
import { BENCH_DEFAULTS, startScript } from './service-process.ts'
import { type EngineRun, pairedRatio, summarize, TARGETS, type TargetSummary } from './summary.ts'
import { targetsSection } from './targets.ts'
import { turnsOf } from './turns.ts'

export interface ReportInput {
  environment: Environment
  command: string
  options: BenchOptions
  engineRuns: EngineRun[]
  /** Setup facts worth a line each: pinning, skipped engines, PostgreSQL version… */
  notes: string[]
}

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
function logSinkTable(engineRuns: EngineRun[]): string {
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

const busy = (run: LoadResult) =>
  `${run.busy.server.toFixed(2)} / ${run.busy.load.toFixed(2)}` +
  (run.loadCoreIdle === undefined ? '' : ` (${run.loadCoreIdle.toFixed(2)})`)

// Below this idle share of its core, the load generator, not the server, may have set a run's pace.
const PACED_BY_LOAD = 0.1

/** Which targets' runs left the load generator's core nearly full, if any did. */
function loadPacingNote(engineRuns: EngineRun[]): string {
  const counts = TARGETS.map((target) => {
    const runs = engineRuns.flatMap((run) => run.scenarios.flatMap((scenario) => scenario.runs[target]))
    const paced = runs.filter((run) => run.loadCoreIdle !== undefined && run.loadCoreIdle < PACED_BY_LOAD)
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

/** Every run, so a median can be checked against what it summarizes. */
function runsTable(engineRuns: EngineRun[]): string {
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
    ]),
    row(['---', '---', '---:', '---', '---:', '---:', '---:', '---:', '---:', '---']),
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
            ]),
          )
        }
      })
    }
  }
  return lines.join('\n')
}

function serviceLogs(engineRuns: EngineRun[]): string {
  const logged = engineRuns.filter((run) => run.serviceLog.trim() !== '')
  if (logged.length === 0) return 'The service logged no warning or error during the runs.'
  return logged
    .map((run) => `${ENGINE_LABELS[run.engine]}:\n\n\`\`\`\n${run.serviceLog.trim().slice(-4000)}\n\`\`\``)
    .join('\n\n')
}

function nodeFlagsNote(options: BenchOptions): string {
  return options.nodeFlags.length === 0
    ? ''
    : ` with \`${options.nodeFlags.join(' ')}\` added to node's flags`
}

function logBytes(engineRuns: EngineRun[]): string {
  const perResponse = engineRuns.map(
    (run) => `${ENGINE_LABELS[run.engine]} ${Math.round(run.serviceLogBytesPerResponse)}`,
  )
  return `bytes written per response: ${perResponse.join(', ')}`
}

function sinkDescription(engineRuns: EngineRun[]): string {
  return engineRuns[0]?.serviceLogSink === 'pipe'
    ? "a pipe the bench drains as a log collector would (on the server's core; it only searches the lines for warnings)"
    : 'a file on disk, as a service that logs to a file (or whose collector tails one, on another core) has it: ' +
        'the service pays for its writes, nothing reads the file while the load runs (the bench searches ' +
        "it for warnings after each scenario's round)"
}

export function markdownReport(input: ReportInput): string {
  const { environment: env, options } = input
  const turns = turnsOf(options.durationS, options.sliceS)
  return `# Benchmarks

Generated by \`npm run bench\` (bench/run-bench.ts); do not edit by hand, run it again.
${options.quick ? '\n**This is a --quick smoke run (1 round, short runs): do not compare its numbers.**\n' : ''}
- Date: ${env.date}
- Command: \`${input.command}\`
- Node.js: ${env.node}
- Commit: ${env.commit}
- Machine: ${env.cores} cores, ${env.cpuModel}, ${env.memoryGiB} GiB memory; load average ${env.loadAverage.toFixed(2)} before the run
- Load: autocannon, ${options.connections} connections, 1 worker; each round warms up every target (${options.warmupS} s), then measures them in ${turns.count} turns of ${turns.seconds.toFixed(2)} s each (A B C, C B A, …), ${options.durationS} s per target; ${options.rounds} round(s); ${options.pets.toLocaleString('en-US')} seeded pets
${input.notes.map((note) => `- ${note}`).join('\n')}

## What is measured

- **Service**: what \`npm start\` runs, \`${startScript()}\`${nodeFlagsNote(options)} (Fastify, validation, auth, rate limiting,
  the real store, metrics), with ${Object.entries(BENCH_DEFAULTS)
    .map(([name, value]) => `\`${name}=${value}\``)
    .join(', ')}: the rate limit is counted on every request but never reached. Its log level is
  npm start's, \`info\`: one JSON line per request, on its standard output, ${sinkDescription(input.engineRuns)}, ${logBytes(input.engineRuns)}.
  It is started once and stopped before the measured start, so that start finds its modules in the
  compile cache (bin/petstore.js), as every start of a deployment after its first does.
- **Logs off** (only with \`--logs-off\`): the same service with \`LOG_LEVEL=warn\`, in the same rounds;
  **Logs on/off** is what writing the request log keeps of the throughput.
- **Fastify**: \`bench/fastify-baseline-server.ts\`, a minimal Fastify app with the service's TypeBox
  schemas, validator and JSON body parser, serializing pets from memory through the response schemas on
  every request, with the same key check as the bare baseline; no store, cache, rate limit, metrics or log.
  The framework's own ceiling: **Service/Fastify** is what everything the service adds to it costs.
- **Bare**: \`bench/baseline-server.ts\`, bare \`node:http\` replaying the service's own recorded
  response bytes and headers from memory, with a constant-time API-key check and an in-memory create.
  **Service/bare** is the service's req/s over the bare server's: the share of the machine's bare HTTP
  throughput the service keeps. Each round measures every target on the same scenario (service, logs
  off, Fastify, bare) in turns, by one load generator, its order reversed every other turn, an even
  number of turns, after warm-ups in the reverse order of the first: a shared host's noise, which moves
  over seconds, hits all of them alike, and a steady drift gives each the same mean place. A short pause
  before and after each turn, in no one's wall time, counts what a server still does after its last
  answer in its own CPU time, not in the next one's.
- Both baselines run with \`--no-memory-reducer\`: idle while the other targets run, after a few such
  waits V8's memory reducer left them about a quarter slower per request for the rest of the run, which
  made the service's share look higher in every round after the first. The service's cost does not
  change with it (docs/benchmarks/tuning.md, "Idle baselines"). Both run the service's own HTTP server
  option, \`optimizeEmptyRequests\` (a request without a body starts ended): it is Node's, and a baseline
  without it would count it as the service's gain (docs/decisions.md, "Per-request cost").
- Profiles of the service under this load, the request log's cost and the young-generation curve behind
  \`--max-semi-space-size\`: [benchmarks/tuning.md](benchmarks/tuning.md) (\`--node-flags\`,
  \`--service-stdout\` and \`bench/profile-summary.ts\` make them).
- **Service/bare, /Fastify, round by round**: the median over the rounds of each round's own ratio, the
  service's req/s over the bare server's (then over the Fastify app's) in that round. Their turns
  alternate a second or so apart, so a host that speeds up or slows down moves both; the ratio of two
  medians can pair one side's fast round with the other's slow one.
- **Share of bare, best rounds**: the service's fastest round over the bare server's fastest. Other work on a shared
  host only ever slows a run down, so each side's fastest round is the closest to what it does
  undisturbed. On a quiet host it agrees with the median share; on a noisy one the median share swings
  with whichever side the noise happened to hit.
- **CPU µs per request**: each server process's CPU time (all its threads and, under WORKERS, its
  workers; not a PostgreSQL server's) over its measured turns and the pause after each, divided by the
  responses; median over the rounds. It is the cost of a request, not a noise-free measure: contention
  on the host (shared caches, a busy sibling hyperthread) makes the same work take more CPU time.
- **Busy** (under "Every run"): over the measured turns, the server's CPU time over the wall time, the
  load generator's own, and in parentheses the idle share of the load generator's core when it has one.
  A server near 1 set the pace; a load generator's core with little idle time may have set it instead.
- Scenarios: \`list20\` GET /v1/pets; \`list100\` ?limit=100; \`list-status\` ?status=available&limit=20;
  \`get\` GET /v1/pets/{id} over ten ids spread across the seeded range; \`create\` POST /v1/pets (201);
  \`create-keyed\` the same, each with an Idempotency-Key of its own; \`unauthorized\` GET /v1/pets with an unknown key (401 expected); \`mixed\` 40 % list20, 40 % get, 20 % create.
  Every request carries \`User-Agent: node\`, as Node's fetch (under the typed client) sends it, so each
  request line has the user agent a deployment's lines have.
- req/s counts responses with the expected status only (200, or 201 for creates, 401 for
  \`unauthorized\`). req/s and latencies are medians over the rounds; latencies are measured per response in the load
  generator (microsecond resolution). Errors are summed over all rounds: "status" counts responses with a
  status the scenario does not expect, "socket" counts connection errors and timeouts.
- Peak RSS is the service process's VmHWM after all scenarios of an engine (it cannot be reset between
  scenarios, so it is the peak of the whole engine run); under WORKERS, the sum over the supervisor and
  its workers.

## Results

${resultsTable(input.engineRuns)}
${loadPacingNote(input.engineRuns)}${logSinkTable(input.engineRuns)}
${targetsSection(input.engineRuns)}
## Service log

${serviceLogs(input.engineRuns)}

## Every run

${runsTable(input.engineRuns)}
`
}
