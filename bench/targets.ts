import { ENGINE_LABELS } from './engines.ts'
import type { LoadResult } from './load.ts'
import type { EngineName } from './options.ts'
import { READ_SCENARIOS, type ScenarioName } from './scenarios.ts'
import { type EngineRun, median, PACED_BY_LOAD, pacedByLoad, pairedRounds, TARGETS } from './summary.ts'

// The service's performance targets (docs/benchmarks.md, "Targets"), each checked round by round: a
// round's targets take turns a slice apart (`--slice`), so each round is one paired measurement.

/** The least share of the bare server's req/s the service keeps, per scenario; creates are durable. */
function shareOfBare(engine: EngineName, scenario: ScenarioName): number | undefined {
  if (scenario === 'create') return engine === 'postgres' ? 0.3 : 0.45
  return { list20: 0.8, list100: 0.7, 'list-status': 0.8, get: 0.85, unauthorized: 0.9 }[scenario as string]
}

/** What a target compares: req/s, latencies under full load, or latencies at a fixed rate. */
type Kind = 'rates' | 'latencies' | 'fixed rate'

interface Round {
  value: number
  held: boolean
  /** The load generator may have decided this round's verdict (UNSURE). */
  unsure: boolean
}

interface Check {
  engine: EngineName
  scenario: ScenarioName
  what: string
  kind: Kind
  /** The measure in each round, and whether that round holds the target. */
  rounds: Round[]
  holds: (value: number) => boolean
}

/** Whether the load generator may have decided a round where `a` against `b` measured so. */
const UNSURE: Record<Kind, (a: LoadResult, b: LoadResult, held: boolean) => boolean> = {
  // A run it paced is slower than its server: that can make a round look held (its b) or missed (its a).
  rates: (a, b, held) => pacedByLoad(held ? b : a),
  // Its own delay adds to both latencies: either way.
  latencies: (a, b) => pacedByLoad(a) || pacedByLoad(b),
  // A run where it sent its 99th percentile request late by half the bare server's p99 or more.
  'fixed rate': (a, b) => {
    const bareP99 = b.fixedRate?.latencyMs.p99 ?? 0
    return [a, b].some((run) => (run.fixedRate?.sendLagP99Ms ?? 0) >= bareP99 / 2)
  },
}

function checksOf(engineRun: EngineRun): Check[] {
  const { engine } = engineRun
  return engineRun.scenarios.flatMap(({ scenario, runs }) => {
    const checks: Check[] = []
    // Each round's `measure` of the service's run against the other target's in the same round.
    const add = (
      kind: Kind,
      what: string,
      pairs: Array<[LoadResult, LoadResult]>,
      measure: (a: LoadResult, b: LoadResult) => number,
      holds: (value: number) => boolean,
    ) => {
      const rounds = pairs.map(([run, other]) => {
        const value = measure(run, other)
        const held = holds(value)
        return { value, held, unsure: UNSURE[kind](run, other, held) }
      })
      if (rounds.length > 0) checks.push({ engine, scenario, what, kind, rounds, holds })
    }
    const share = shareOfBare(engine, scenario)
    const rps = (a: LoadResult, b: LoadResult) => a.requestsPerSecond / b.requestsPerSecond
    const withBare = pairedRounds(runs.service, runs.baseline)
    if (share !== undefined) {
      add('rates', `≥ ${share.toFixed(2)} of bare`, withBare, rps, (v) => v >= share)
    }
    if (READ_SCENARIOS.includes(scenario)) {
      add('rates', '≥ 1.00 of Fastify', pairedRounds(runs.service, runs.fastify), rps, (v) => v >= 1)
      const p99 = (a: LoadResult, b: LoadResult) => a.latencyMs.p99 / b.latencyMs.p99
      add('latencies', 'p99 ≤ 2 × bare', withBare, p99, (v) => v <= 2)
      const fixedP99 = (a: LoadResult, b: LoadResult) =>
        (a.fixedRate?.latencyMs.p99 ?? Number.NaN) / (b.fixedRate?.latencyMs.p99 ?? Number.NaN)
      const atFixedRate = withBare.filter(([a, b]) => a.fixedRate !== undefined && b.fixedRate !== undefined)
      add('fixed rate', 'p99 at a fixed rate ≤ 2 × bare', atFixedRate, fixedP99, (v) => v <= 2)
    }
    const logsOn = pairedRounds(runs.service, runs['logs-off'])
    add('rates', 'logs on/off ≥ 0.95', logsOn, rps, (v) => v >= 0.95)
    return checks
  })
}

type Verdict = { kind: 'held' | 'missed' | 'noise' | 'unjudged'; text: string }

/** Judged on the rounds no paced run could have decided; those set aside are said. */
function verdict({ kind, rounds, holds }: Check): Verdict {
  const sure = rounds.filter((round) => !round.unsure)
  if (sure.length === 0) {
    const why = kind === 'fixed rate' ? 'sent late in every round' : 'may have set the pace in every round'
    return { kind: 'unjudged', text: `not judged: the load generator ${why}` }
  }
  const aside = sure.length < rounds.length ? `, ${rounds.length - sure.length} set aside*` : ''
  const held = sure.filter((round) => round.held).length
  const all = rounds.length === 1 ? ' (one round)' : ` in every round${aside ? ' judged' : ''}`
  if (held === sure.length) return { kind: 'held', text: `held${all}${aside}` }
  if (held === 0) return { kind: 'missed', text: `missed${all}${aside}` }
  // Which side of the line the median falls on: a coin's side, with so few rounds, but said.
  const medianHeld = holds(median(sure.map((round) => round.value)))
  const side = medianHeld ? 'the median holds' : 'the median misses'
  return {
    kind: 'noise',
    text: `held in ${held} of ${sure.length}${aside} (${side}): within this run's noise`,
  }
}

/** How far the bare server's req/s moved between the rounds of one scenario: the host's own noise. */
function bareSpread(engineRuns: EngineRun[]): string {
  const spreads = engineRuns.flatMap((run) =>
    run.scenarios.map(({ runs }) => {
      const rates = runs.baseline.map((result) => result.requestsPerSecond)
      return rates.length < 2 ? Number.NaN : Math.max(...rates) / Math.min(...rates) - 1
    }),
  )
  const finite = spreads.filter(Number.isFinite)
  if (finite.length === 0) return ''
  const percent = (value: number) => `${Math.round(value * 100)} %`
  return (
    `\nOn this host the bare server's req/s moved between the rounds of one scenario by ${percent(median(finite))}` +
    ` (median over the scenarios; at most ${percent(Math.max(...finite))}).`
  )
}

function errorLine(engineRuns: EngineRun[]): string {
  const runs = engineRuns.flatMap((run) =>
    run.scenarios.flatMap((scenario) => TARGETS.flatMap((target) => scenario.runs[target])),
  )
  const errors = runs.reduce(
    (sum, run) =>
      sum +
      run.unexpectedStatus +
      run.socketErrors +
      (run.fixedRate ? run.fixedRate.unexpectedStatus + run.fixedRate.socketErrors : 0),
    0,
  )
  return errors === 0
    ? `Errors: none in ${runs.length} runs (every target, every round).`
    : `Errors: ${errors} over ${runs.length} runs (every target, every round): the target of zero is missed.`
}

// The request log's own target needs the service with logs off in the same rounds, which only
// `--logs-off` runs: said, rather than left out of the count unseen.
function logCostLine(checks: Check[]): string {
  if (checks.some((check) => check.what.startsWith('logs on/off'))) return ''
  return "\nThe request log's cost (logs on/off ≥ 0.95 of req/s) is not measured in this run: `--logs-off` adds the service with logs off to every round."
}

// Said only when a round was set aside, for the kinds of target it was.
function setAsideLine(checks: Check[]): string {
  const aside = checks.filter((check) => check.rounds.some((round) => round.unsure))
  if (aside.length === 0) return ''
  const said: string[] = []
  if (aside.some((check) => check.kind !== 'fixed rate')) {
    said.push(
      `in that round, the load generator's core was less than ${PACED_BY_LOAD * 100} % idle in a run whose slowness could make the round look held (the baseline's, for a share of it) or missed (the service's), so it may have set the pace; a round judged on latencies is set aside when either run was.`,
    )
  }
  if (aside.some((check) => check.kind === 'fixed rate')) {
    said.push(
      `${said.length > 0 ? 'A' : 'a'} round at a fixed rate, when the load generator sent its 99th percentile request late by half the bare server's p99 or more in either run: that delay is in both latencies.`,
    )
  }
  return `\n\n\\* Set aside: ${said.join(' ')} The verdict is drawn from the other rounds.`
}

/** The "Targets" section: each target, its value round by round, its median, and whether it held. */
export function targetsSection(engineRuns: EngineRun[]): string {
  const checks = engineRuns.flatMap(checksOf)
  const verdicts = checks.map(verdict)
  const lines = [
    '| Engine | Scenario | Target | Round by round | Median | Verdict |',
    '| --- | --- | --- | ---: | ---: | --- |',
    ...checks.map(
      (check, at) =>
        `| ${ENGINE_LABELS[check.engine]} | ${check.scenario} | ${check.what} | ` +
        `${check.rounds.map((round) => `${round.value.toFixed(2)}${round.unsure ? '*' : ''}`).join(' / ')} | ` +
        `${median(check.rounds.map((round) => round.value)).toFixed(2)} | ${verdicts[at]?.text} |`,
    ),
  ]
  const count = (kind: Verdict['kind']) => verdicts.filter((said) => said.kind === kind).length
  return `## Targets

Each target measured in every round, on that round's own turns (alternating): a target held in every
round holds on this host, one missed in every round is missed, and one held in some rounds only is
closer to its line than this host's run-to-run noise can tell.${bareSpread(engineRuns)}

${lines.join('\n')}

Held: ${count('held')} of ${checks.length}; missed: ${count('missed')}; within the noise: ${count('noise')}${count('unjudged') > 0 ? `; not judged: ${count('unjudged')}` : ''}. ${errorLine(engineRuns)}${logCostLine(checks)}${setAsideLine(checks)}
`
}
