import { resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { UsageError } from '../src/cli/command.ts'
import { integerOption } from '../src/cli/command-args.ts'
import { SCENARIO_NAMES, type ScenarioName } from './scenarios.ts'
import { LOG_SINKS, type LogSink } from './service-output.ts'

export type EngineName = 'sqlite' | 'postgres'

export interface BenchOptions {
  engines: EngineName[]
  pets: number
  connections: number
  warmupS: number
  durationS: number
  /** Seconds of one turn of a target within a round's measured time (`--slice`). */
  sliceS: number
  rounds: number
  scenarios: ScenarioName[]
  quick: boolean
  /** Extra settings for the service process (`--service-env NAME=VALUE`). */
  serviceEnv: Record<string, string>
  /** Also measure the service with request logs off (LOG_LEVEL=warn), in the same interleaved rounds. */
  logsOff: boolean
  /** Where the service's log goes; with `both`, a file, and a second service logs to a pipe (interleaved). */
  logSinks: LogSink[]
  /** Node.js flags added after the start script's own (a repeated V8 flag: the last one wins). */
  nodeFlags: string[]
  /** Also copy the service's standard output (its log, a --trace-gc trace) to this file. */
  serviceStdout: string | undefined
  /**
   * Where a serving process's heap is captured (two sampling profiles, a snapshot) when its scavenges turn
   * slow (`--heap-watch DIR`); undefined: their collections are read and reported, never captured.
   */
  heapWatch: string | undefined
  /** Latency at a fixed rate: this share of the slowest target's req/s, in every read scenario; 0: none. */
  fixedRateShare: number
  /** Where the Markdown report goes, relative to the repository. */
  output: string
}

export const USAGE = `Usage: npm run bench -- [options]

  --engine sqlite|postgres|all   storage engines to measure (default all; postgres is skipped if unavailable)
  --pets N                       pets seeded before the service starts (default 10000)
  --connections N                concurrent connections of the load generator (default 32)
  --warmup S                     warm-up seconds per target before a round's measured turns (default 2)
  --duration S                   measured seconds per target and round (default 5)
  --slice S                      the targets of a round take turns about this long each, A B C then C B A,
                                 an even number of turns, until each has had its --duration (default 1;
                                 0.25 to 3600, to the hundredth: 0.5 for half a second)
  --rounds N                     service/baseline pairs per scenario; the median is reported (default 3)
  --scenarios a,b                subset of: ${SCENARIO_NAMES.join(', ')}
  --fixed-rate SHARE             after each read scenario's measured turns, every target again at one fixed
                                 rate, SHARE of the slowest one's req/s, for half the measured time: latency
                                 from each request's due time, a stall charged for every request it held
                                 back (default 0.5; 0.05 to 0.95, to the hundredth; 0: not measured)
  --quick                        smoke test: 1 round, 1 s warm-up, 2 s measured
  --service-env NAME=VALUE       an extra setting for the service (repeatable), e.g. WORKERS=2
  --logs-off                     also measure the service with request logs off (LOG_LEVEL=warn), interleaved
  --log-sink file|pipe|both      the service's stdout (its log): a file on disk, or a pipe the bench drains
                                 on the server's core; both (default): the file, and a second service on a
                                 pipe measured in the same rounds
  --node-flags="FLAGS"           node flags for the service after npm start's own (note the =), e.g.
                                 --node-flags="--cpu-prof --cpu-prof-dir=/abs/dir --trace-gc"
  --service-stdout FILE          also copy the service's standard output (log lines, --trace-gc) to FILE
  --heap-watch DIR               when a serving process's scavenges average over 3 ms in a 10 s window, capture
                                 its heap (sampling profiles, a snapshot) and one beside it to DIR (the round
                                 is disturbed); without it, their collections are still read and reported
  --output PATH                  where the report goes (default docs/benchmarks.md)
  --help                         this text`

function engines(raw: string | undefined): EngineName[] {
  if (raw === undefined || raw === 'all') return ['sqlite', 'postgres']
  if (raw === 'sqlite' || raw === 'postgres') return [raw]
  throw new UsageError(`--engine must be sqlite, postgres or all (got "${raw}")`)
}

// Shorter turns would be mostly the pauses around them (turns.ts, TURN_PAUSE_MS) and the connections' start.
const SHORTEST_SLICE_S = 0.25

/** `--slice`: seconds, whole or to the hundredth, from SHORTEST_SLICE_S to an hour. */
function sliceSeconds(raw: string | undefined): number {
  if (raw === undefined) return 1
  const seconds = /^(0|[1-9][0-9]*)(\.[0-9]{1,2})?$/.test(raw) ? Number(raw) : Number.NaN
  if (!(seconds >= SHORTEST_SLICE_S && seconds <= 3600)) {
    throw new UsageError(
      `--slice must be seconds from ${SHORTEST_SLICE_S} to 3600, to the hundredth (got "${raw}")`,
    )
  }
  return seconds
}

/** `--fixed-rate`: a share of the slowest target's req/s, to the hundredth; 0 turns it off. */
function fixedRateShare(raw: string | undefined): number {
  if (raw === undefined) return 0.5
  const share = /^(0|1)?(\.[0-9]{1,2})?$/.test(raw) && raw !== '' ? Number(raw) : Number.NaN
  if (share === 0) return 0
  if (!(share >= 0.05 && share <= 0.95)) {
    throw new UsageError(
      `--fixed-rate must be a share from 0.05 to 0.95, to the hundredth, or 0 (got "${raw}")`,
    )
  }
  return share
}

function scenarios(raw: string | undefined): ScenarioName[] {
  if (raw === undefined) return [...SCENARIO_NAMES]
  const names = raw.split(',').map((name) => name.trim())
  for (const name of names) {
    if (!(SCENARIO_NAMES as readonly string[]).includes(name)) {
      throw new UsageError(`unknown scenario "${name}" (known: ${SCENARIO_NAMES.join(', ')})`)
    }
  }
  // Run order stays the canonical one whatever order they were listed in, so reports compare.
  return SCENARIO_NAMES.filter((name) => names.includes(name))
}

// Set by the bench itself: overriding them would point the load at the wrong place or lock it out.
const MANAGED_SETTINGS = new Set(['PORT', 'HOST', 'DATABASE_URL', 'API_KEYS'])

function serviceEnv(entries: string[] | undefined): Record<string, string> {
  const env: Record<string, string> = {}
  for (const entry of entries ?? []) {
    const match = /^([A-Z][A-Z0-9_]*)=(.*)$/s.exec(entry)
    if (!match?.[1] || match[2] === undefined) {
      throw new UsageError(`--service-env must be NAME=VALUE (got "${entry}")`)
    }
    if (MANAGED_SETTINGS.has(match[1])) throw new UsageError(`--service-env cannot set ${match[1]}`)
    env[match[1]] = match[2]
  }
  return env
}

function logSinks(raw: string | undefined): LogSink[] {
  if (raw === undefined || raw === 'both') return [...LOG_SINKS]
  if ((LOG_SINKS as readonly string[]).includes(raw)) return [raw as LogSink]
  throw new UsageError(`--log-sink must be file, pipe or both (got "${raw}")`)
}

function nodeFlags(raw: string | undefined): string[] {
  const flags = (raw ?? '').split(/\s+/).filter(Boolean)
  const notFlag = flags.find((flag) => !flag.startsWith('--'))
  if (notFlag !== undefined) throw new UsageError(`--node-flags takes only --flags (got "${notFlag}")`)
  return flags
}

/** `--heap-watch`: a directory, made absolute from where the bench was started. */
function heapWatch(raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined
  if (raw === '') throw new UsageError('--heap-watch must name a directory')
  return resolve(raw)
}

function output(raw: string | undefined): string {
  if (raw === undefined) return 'docs/benchmarks.md'
  if (!/^[\w./-]+\.md$/.test(raw) || raw.includes('..')) {
    throw new UsageError(`--output must be a relative path to a .md file (got "${raw}")`)
  }
  return raw
}

/** The options, or undefined when `--help` was asked for. */
export function parseOptions(args: string[]): BenchOptions | undefined {
  let values: ReturnType<typeof parse>['values']
  try {
    values = parse(args).values
  } catch (error) {
    throw new UsageError((error as Error).message.split('\n')[0] ?? '')
  }
  if (values.help) return undefined
  const quick = values.quick === true
  return {
    engines: engines(values.engine),
    pets: integerOption('pets', values.pets, 10_000, 10_000_000),
    connections: integerOption('connections', values.connections, 32, 10_000),
    // --quick only changes the defaults: explicit values still win, so a quick run can be tuned.
    warmupS: integerOption('warmup', values.warmup, quick ? 1 : 2, 600),
    durationS: integerOption('duration', values.duration, quick ? 2 : 5, 3600),
    sliceS: sliceSeconds(values.slice),
    rounds: integerOption('rounds', values.rounds, quick ? 1 : 3, 100),
    scenarios: scenarios(values.scenarios),
    quick,
    serviceEnv: serviceEnv(values['service-env']),
    logsOff: values['logs-off'] === true,
    logSinks: logSinks(values['log-sink']),
    nodeFlags: nodeFlags(values['node-flags']),
    serviceStdout: values['service-stdout'],
    heapWatch: heapWatch(values['heap-watch']),
    fixedRateShare: fixedRateShare(values['fixed-rate']),
    output: output(values.output),
  }
}

function parse(args: string[]) {
  return parseArgs({
    args,
    strict: true,
    options: {
      engine: { type: 'string' },
      pets: { type: 'string' },
      connections: { type: 'string' },
      warmup: { type: 'string' },
      duration: { type: 'string' },
      slice: { type: 'string' },
      rounds: { type: 'string' },
      scenarios: { type: 'string' },
      quick: { type: 'boolean' },
      'service-env': { type: 'string', multiple: true },
      'logs-off': { type: 'boolean' },
      'log-sink': { type: 'string' },
      'node-flags': { type: 'string' },
      'service-stdout': { type: 'string' },
      'heap-watch': { type: 'string' },
      'fixed-rate': { type: 'string' },
      output: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  })
}
