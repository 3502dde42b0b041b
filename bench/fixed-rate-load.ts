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
  /** Over every request due, from its due time to the end of its answer, or to its failure. */
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
  /** Every request due: an answered one at its answer, a failed one at its age when it failed. */
  latenciesUs: RecordableHistogram
  sendLagUs: RecordableHistogram
  requests: number
  unexpectedStatus: number
  socketErrors: number
}

const fixedRateTally = (): FixedRateTally => ({
  latenciesUs: createHistogram(),
  sendLagUs: createHistogram(),
  requests: 0,
  unexpectedStatus: 0,
  socketErrors: 0,
})

// As autocannon's `timeout` in load.ts: what is unanswered this long after a turn's last request was due
// has failed.
const TIMEOUT_MS = 10_000

interface FixedRateTurn {
  connections: HttpConnections
  requests: Buffer[]
  expectedStatuses: number[]
  ratePerS: number
  seconds: number
}

const us = (ms: number) => Math.max(1, Math.round(ms * 1000))

/** Whether `promise` settled within `ms`. */
async function settledWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  const timer = new AbortController()
  try {
    return await Promise.race([promise.then(() => true), sleep(ms, false, { signal: timer.signal })])
  } finally {
    timer.abort()
  }
}

/** Sends `requests` in turn, `ratePerS` a second for `seconds`, and waits for the last answer. */
async function fixedRateTurn(turn: FixedRateTurn, tally: FixedRateTally): Promise<void> {
  const { connections, requests, expectedStatuses, ratePerS, seconds } = turn
  // Every connection opened (again, if the server closed it idle) before any latency counts.
  if (!(await settledWithin(connections.warm(requests[0] as Buffer), TIMEOUT_MS))) connections.close()
  const due = Math.max(1, Math.round(ratePerS * seconds))
  const intervalMs = 1000 / ratePerS
  const startMs = performance.now()
  // Each request sent and not yet answered or failed: its due time.
  const unanswered = new Map<number, number>()
  let ended = false
  let lastAnswered = () => {}
  const settled = (index: number, dueMs: number) => {
    tally.latenciesUs.record(us(performance.now() - dueMs))
    unanswered.delete(index)
    if (unanswered.size === 0) lastAnswered()
  }
  for (let sent = 0; sent < due; ) {
    // Every request already due goes now: a late turn of the event loop delays them, never drops them.
    for (; sent < due && startMs + sent * intervalMs <= performance.now(); sent++) {
      const index = sent
      const dueMs = startMs + index * intervalMs
      tally.sendLagUs.record(us(performance.now() - dueMs))
      unanswered.set(index, dueMs)
      connections.request(requests[index % requests.length] as Buffer).then(
        (status) => {
          if (ended) return
          tally.requests++
          if (!expectedStatuses.includes(status)) tally.unexpectedStatus++
          settled(index, dueMs)
        },
        () => {
          if (ended) return
          tally.socketErrors++
          settled(index, dueMs)
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
    const lastDueMs = startMs + (due - 1) * intervalMs
    await settledWithin(allAnswered, Math.max(0, lastDueMs + TIMEOUT_MS - performance.now()))
  }
  ended = true
  // What is still unanswered has failed, at its age now; its connections are opened again.
  for (const dueMs of unanswered.values()) {
    tally.socketErrors++
    tally.latenciesUs.record(us(performance.now() - dueMs))
  }
  if (unanswered.size > 0) connections.close()
}

const toMs = (value: number) => Math.round(value) / 1000

function fixedRateResult(tally: FixedRateTally, ratePerS: number): FixedRateResult {
  const { latenciesUs } = tally
  const at = (percentile: number) => (latenciesUs.count > 0 ? toMs(latenciesUs.percentile(percentile)) : 0)
  return {
    ratePerS,
    latencyMs: { p50: at(50), p99: at(99), p999: at(99.9), max: at(100) },
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
  if (!(ratePerS >= 1 && Number.isFinite(ratePerS))) return undefined
  const targets = spec.targets.map(({ origin }) => ({
    connections: new HttpConnections(origin, spec.connections),
    requests: spec.requests.map((request) => requestBytes(origin, request)),
    tally: fixedRateTally(),
  }))
  const { count, seconds } = turnsOf(spec.durationS / 2, spec.sliceS)
  const turnOf = ({ connections, requests }: (typeof targets)[number], turnSeconds: number) => ({
    connections,
    requests,
    expectedStatuses: spec.expectedStatuses,
    ratePerS,
    seconds: turnSeconds,
  })
  // An uncounted turn each first: the generator's own code compiles in them, not in a target's tail (its
  // p99 came down from 6 ms to 0.3 ms over 6 s, the four or five targets of a default run; tuning.md).
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
