import { createHistogram, type RecordableHistogram } from 'node:perf_hooks'
import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises'
import { HttpConnections, requestBytes } from './http-connections.ts'
import type { LoadRequest } from './scenarios.ts'
import { turnsOf } from './turns.ts'

/**
 * Latency at a fixed rate (open loop): requests are sent on a schedule, whatever the server's pace, and
 * each one's latency counts from the time it was due. A closed-loop generator (autocannon) sends nothing
 * while its connections wait, so a stall delays only the requests in flight (coordinated omission).
 */

export interface FixedRateResult {
  /** The rate requests were due at: the round's slowest target's req/s times `--fixed-rate`. */
  ratePerS: number
  /** Over every request due, from its due time to the end of its answer; `max` counts failed ones too. */
  latencyMs: { p50: number; p99: number; p999: number; max: number }
  /**
   * How late the generator itself sent requests (99th percentile): it is in every latency, so a lag near
   * a server's p99 says the generator, not the server, made that tail.
   */
  sendLagP99Ms: number
  requests: number
  unexpectedStatus: number
  /** Connection errors and timeouts: requests that got no answer. */
  socketErrors: number
}

/** What one target's turns at a fixed rate add up to. */
interface FixedRateTally {
  latenciesUs: RecordableHistogram
  sendLagUs: RecordableHistogram
  requests: number
  unexpectedStatus: number
  socketErrors: number
  /** The age of the oldest request that failed (a timeout's is 10 s). */
  oldestFailedUs: number
}

const fixedRateTally = (): FixedRateTally => ({
  latenciesUs: createHistogram(),
  sendLagUs: createHistogram(),
  requests: 0,
  unexpectedStatus: 0,
  socketErrors: 0,
  oldestFailedUs: 0,
})

// As autocannon's `timeout` in load.ts: a request unanswered this long after its due time has failed.
const TIMEOUT_MS = 10_000

interface FixedRateTurn {
  connections: HttpConnections
  /** How many the warm-up opens before any latency counts. */
  connectionCount: number
  requests: Buffer[]
  expectedStatuses: number[]
  ratePerS: number
  seconds: number
}

const us = (ms: number) => Math.max(1, Math.round(ms * 1000))

/** Sends `requests` in turn, `ratePerS` a second for `seconds`, and waits for the last answer. */
async function fixedRateTurn(turn: FixedRateTurn, tally: FixedRateTally): Promise<void> {
  const { connections, requests, expectedStatuses, ratePerS, seconds } = turn
  // Every connection opened (again, if the server closed it idle) before any latency counts.
  const first = requests[0] as Buffer
  await Promise.allSettled(Array.from({ length: turn.connectionCount }, () => connections.request(first)))
  const due = Math.max(1, Math.round(ratePerS * seconds))
  const intervalMs = 1000 / ratePerS
  const startMs = performance.now()
  const unanswered = new Set<number>()
  let ended = false
  let lastAnswered = () => {}
  const answered = (dueMs: number) => {
    unanswered.delete(dueMs)
    if (unanswered.size === 0) lastAnswered()
  }
  for (let sent = 0; sent < due; ) {
    const nowMs = performance.now()
    // Every request already due goes now: a late turn of the event loop delays them, never drops them.
    for (; sent < due && startMs + sent * intervalMs <= nowMs; sent++) {
      const dueMs = startMs + sent * intervalMs
      tally.sendLagUs.record(us(nowMs - dueMs))
      unanswered.add(dueMs)
      connections.request(requests[sent % requests.length] as Buffer).then(
        (status) => {
          if (ended) return
          tally.latenciesUs.record(us(performance.now() - dueMs))
          tally.requests++
          if (!expectedStatuses.includes(status)) tally.unexpectedStatus++
          answered(dueMs)
        },
        () => {
          if (ended) return
          tally.socketErrors++
          tally.oldestFailedUs = Math.max(tally.oldestFailedUs, us(performance.now() - dueMs))
          answered(dueMs)
        },
      )
    }
    // A turn of the event loop, not a timer's millisecond: the schedule is kept to a few microseconds.
    await nextTurn()
  }
  if (unanswered.size > 0) {
    const allAnswered = new Promise<void>((resolve) => {
      lastAnswered = resolve
    })
    await Promise.race([allAnswered, sleep(TIMEOUT_MS, undefined, { ref: false })])
  }
  ended = true
  // What is still unanswered has failed, at its age now; its connections are opened again.
  for (const dueMs of unanswered) {
    tally.socketErrors++
    tally.oldestFailedUs = Math.max(tally.oldestFailedUs, us(performance.now() - dueMs))
  }
  if (unanswered.size > 0) connections.close()
}

const toMs = (value: number) => Math.round(value) / 1000

function fixedRateResult(tally: FixedRateTally, ratePerS: number): FixedRateResult {
  const { latenciesUs } = tally
  const answered = tally.requests > 0
  return {
    ratePerS,
    latencyMs: {
      p50: answered ? toMs(latenciesUs.percentile(50)) : 0,
      p99: answered ? toMs(latenciesUs.percentile(99)) : 0,
      p999: answered ? toMs(latenciesUs.percentile(99.9)) : 0,
      max: toMs(Math.max(answered ? latenciesUs.max : 0, tally.oldestFailedUs)),
    },
    sendLagP99Ms: toMs(tally.sendLagUs.percentile(99)),
    requests: tally.requests,
    unexpectedStatus: tally.unexpectedStatus,
    socketErrors: tally.socketErrors,
  }
}

// Seconds of each target's uncounted turn before the counted ones.
const WARM_UP_S = 1.5

/** What `atFixedRate` needs of the load spec (load.ts). */
export interface FixedRateSpec {
  targets: Array<{ origin: string }>
  requests: LoadRequest[]
  expectedStatuses: number[]
  connections: number
  durationS: number
  sliceS: number
  pauseMs: number
  fixedRateShare: number
}

/**
 * Every target at one rate, `fixedRateShare` of the slowest one's req/s (`ratesPerS`, from the measured
 * turns), for half the measured time, in turns ordered as those; undefined when not asked for.
 */
export async function atFixedRate(
  spec: FixedRateSpec,
  ratesPerS: number[],
): Promise<FixedRateResult[] | undefined> {
  const ratePerS = Math.round(spec.fixedRateShare * Math.min(...ratesPerS))
  if (!(ratePerS >= 1)) return undefined
  const connectionCount = spec.connections
  const { expectedStatuses } = spec
  const targets = spec.targets.map(({ origin }) => ({
    connections: new HttpConnections(origin, connectionCount),
    requests: spec.requests.map((request) => requestBytes(origin, request)),
    tally: fixedRateTally(),
  }))
  const { count, seconds } = turnsOf(spec.durationS / 2, spec.sliceS)
  const turnOf = ({ connections, requests }: (typeof targets)[number], turnSeconds: number) => ({
    connections,
    connectionCount,
    requests,
    expectedStatuses,
    ratePerS,
    seconds: turnSeconds,
  })
  // A warm-up turn each first, not counted: the generator's own code compiles in them, not in a
  // target's tail (its p99 came down from 6 ms to 0.3 ms over 6 s of it; tuning.md).
  for (const target of targets.toReversed()) {
    await sleep(spec.pauseMs)
    await fixedRateTurn(turnOf(target, WARM_UP_S), fixedRateTally())
  }
  for (let turn = 0; turn < count; turn++) {
    for (const target of turn % 2 === 0 ? targets : targets.toReversed()) {
      await sleep(spec.pauseMs)
      await fixedRateTurn(turnOf(target, seconds), target.tally)
    }
  }
  for (const { connections } of targets) connections.close()
  return targets.map(({ tally }) => fixedRateResult(tally, ratePerS))
}
