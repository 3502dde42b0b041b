import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { captureHeap, type HeapCapture } from './heap-capture.ts'
import { type Collections, findMetricsOrigin, readCollections } from './service-collections.ts'

/** A serving process the watch reads: its name in the report, its pid, its API's origin. */
export interface WatchedProcess {
  name: string
  pid: number
  origin: string
}

/** A window between two reads: how many scavenges ran in it and their mean pause. */
export interface Window {
  scavenges: number
  meanMs: number
  /** Seconds from the watch's start to the window's end. */
  endS: number
}

/** What the watch saw of one process. */
export interface CollectionsSeen {
  name: string
  /** At the watch's end; undefined without a metrics listener (METRICS=off). */
  last: Collections | undefined
  /** The window whose scavenges paused longest on average, of those with enough of them to say. */
  slowestWindow: Window | undefined
  /** Its heap, captured because a window of its own (or of a process beside it) was slow. */
  capture: (HeapCapture & { reason: string }) | { reason: string; failed: string } | undefined
}

/**
 * A window is slow when at least MIN_SCAVENGES ran in it averaging over SLOW_SCAVENGE_MS: a serving
 * process's scavenges take about 0.4 ms; in the slow state met in two full runs, 24 times as long
 * (docs/benchmarks/tuning.md, "A fourth full run, watched with a heap snapshot ready").
 */
export const MIN_SCAVENGES = 30
export const SLOW_SCAVENGE_MS = 3

export interface WatchOptions {
  /** Between two reads of every process's metrics (a Prometheus scrape's order of interval). */
  intervalMs: number
  /** Where heaps are captured when a window is slow; undefined: never captured. */
  heapDir: string | undefined
  /** Each of a capture's two sampling profiles lasts this long. */
  sampleS: number
  slowScavengeMs?: number
  minScavenges?: number
  /** Told of each capture as it starts and ends. */
  report: (text: string) => void
}

interface State {
  process: WatchedProcess
  metrics: string | undefined
  previous: Collections | undefined
  seen: CollectionsSeen
}

/**
 * Reads each process's collections from its own metrics every `intervalMs`, keeping its slowest window.
 * With a heap directory, the first slow window has that process's heap captured, then one other
 * process's beside it to compare with; the captures take the processes' inspector in turn.
 */
export function watchCollections(processes: WatchedProcess[], options: WatchOptions) {
  const slowMs = options.slowScavengeMs ?? SLOW_SCAVENGE_MS
  const enough = options.minScavenges ?? MIN_SCAVENGES
  // Made now: a directory that cannot be made fails the run at its start, not at a capture an hour in.
  if (options.heapDir !== undefined) mkdirSync(options.heapDir, { recursive: true })
  const startedAt = performance.now()
  const states: State[] = processes.map((process) => ({
    process,
    metrics: undefined,
    previous: undefined,
    seen: { name: process.name, last: undefined, slowestWindow: undefined, capture: undefined },
  }))

  const read = async (state: State): Promise<Collections | undefined> => {
    state.metrics ??= await findMetricsOrigin(state.process.pid, Number(new URL(state.process.origin).port))
    return state.metrics === undefined ? undefined : readCollections(state.metrics)
  }

  const capture = async (state: State, reason: string): Promise<void> => {
    if (options.heapDir === undefined) return
    const prefix = join(options.heapDir, `${state.process.name}-${state.process.pid}`)
    options.report(`${state.process.name}: capturing its heap (${reason})`)
    try {
      state.seen.capture = { reason, ...(await captureHeap(state.process.pid, prefix, options.sampleS)) }
      options.report(`${state.process.name}: heap captured to ${prefix}.*`)
    } catch (error) {
      state.seen.capture = { reason, failed: (error as Error).message }
      options.report(`${state.process.name}: its heap could not be captured: ${(error as Error).message}`)
    }
    // The capture's own pauses are not the process's: its next window starts after it.
    state.previous = await read(state)
  }

  const tick = async (): Promise<void> => {
    for (const state of states) {
      const now = await read(state)
      const before = state.previous
      state.previous = now
      if (now === undefined || before === undefined) continue
      const scavenges = now.scavenges - before.scavenges
      if (scavenges < enough) continue
      const meanMs = ((now.scavengeSeconds - before.scavengeSeconds) * 1000) / scavenges
      const endS = (performance.now() - startedAt) / 1000
      const slowest = state.seen.slowestWindow
      if (slowest === undefined || meanMs > slowest.meanMs)
        state.seen.slowestWindow = { scavenges, meanMs, endS }
      if (meanMs <= slowMs || state.seen.capture !== undefined) continue
      const reason = `${scavenges} scavenges averaging ${meanMs.toFixed(2)} ms in the window ending at ${Math.round(endS)} s`
      await capture(state, reason)
      const beside = states.find((other) => other.seen.capture === undefined)
      if (beside !== undefined) await capture(beside, `beside ${state.process.name}'s slow window`)
    }
  }

  // A tick that outlasts the interval (a capture) is not queued behind: the next one starts on time after it.
  let running: Promise<void> | undefined
  const start = () => {
    running ??= tick().finally(() => {
      running = undefined
    })
  }
  start()
  const timer = setInterval(start, options.intervalMs)
  return {
    /** Ends the watch with a last read of each process (a last window too). */
    async stop(): Promise<CollectionsSeen[]> {
      clearInterval(timer)
      await running
      await tick()
      for (const state of states) state.seen.last = state.previous
      return states.map((state) => state.seen)
    },
  }
}
