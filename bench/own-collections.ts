import { constants, type PerformanceNodeEntry, PerformanceObserver } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'

/** Watches this process's major collections from now on; `stop` gives each one's final pause, in ms. */
export function watchMajorCollections(): { stop(): Promise<number[]> } {
  const pausesMs: number[] = []
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries() as PerformanceNodeEntry[]) {
      if (entry.detail.kind === constants.NODE_PERFORMANCE_GC_MAJOR) pausesMs.push(entry.duration)
    }
  })
  observer.observe({ entryTypes: ['gc'] })
  return {
    async stop() {
      // The observer hears of a collection two turns of the loop later (an immediate queues its entry).
      await sleep(20)
      observer.disconnect()
      return pausesMs
    },
  }
}

/**
 * The report's line on the bench's own major collections during the engines' runs. Its process shares the
 * servers' core, so each one's marking and pause is a stall the servers may meet (docs/benchmarks/tuning.md,
 * "The bench's own collections").
 */
export function ownCollectionsNote(pausesMs: number[]): string {
  const flags = process.execArgv.filter((flag) => flag.includes('space-size'))
  const started = flags.length === 0 ? '' : ` (started with ${flags.map((flag) => `\`${flag}\``).join(' ')})`
  const during = "from the first engine's start to the last one's end"
  if (pausesMs.length === 0) return `The bench's own process${started} ran no major collection ${during}.`
  return (
    `The bench's own process${started} ran ${pausesMs.length} major collection(s) ${during}, on the servers' ` +
    `core; the longest final pause ${Math.max(...pausesMs).toFixed(1)} ms, its marking before it not counted.`
  )
}
