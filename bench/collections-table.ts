import { MIN_SCAVENGES, SLOW_SCAVENGE_MS } from './collection-watch.ts'
import { ENGINE_LABELS } from './engines.ts'
import type { EngineRun } from './summary.ts'

const mean = (seconds: number, count: number) => (count === 0 ? '—' : ((seconds * 1000) / count).toFixed(2))

/**
 * The report's section on each serving process's collections, from its own metrics: a process whose
 * scavenges ran slow (docs/benchmarks/tuning.md, "A fourth full run, watched with a heap snapshot ready")
 * is named here, beside the same service's other processes.
 */
export function collectionsSection(engineRuns: EngineRun[]): string {
  const rows = engineRuns.flatMap((run) =>
    run.collections.map((seen) => {
      const { last, slowestWindow: window, capture } = seen
      const cells = [ENGINE_LABELS[run.engine], seen.name]
      if (last === undefined) return [...cells, 'no metrics listener', '', '', '', '', ''].join(' | ')
      const slowest =
        window === undefined
          ? '—'
          : `${window.meanMs.toFixed(2)} (${window.scavenges}, ending at ${Math.round(window.endS)} s)`
      const captured =
        capture === undefined
          ? ''
          : 'failed' in capture
            ? `not captured: ${capture.failed}`
            : `${capture.snapshot} (${capture.reason})`
      return [
        ...cells,
        String(last.scavenges),
        mean(last.scavengeSeconds, last.scavenges),
        slowest,
        String(last.majors),
        mean(last.majorSeconds, last.majors),
        captured,
      ].join(' | ')
    }),
  )
  if (rows.length === 0) return ''
  return `
## Collections in the serving processes

Read from each process's own metrics (\`nodejs_gc_duration_seconds\`) every 10 s from its start, as a
scraper would, to the end of its engine's run. The slowest window is the 10 s whose scavenges paused
longest on average, of those with at least ${MIN_SCAVENGES} (mean ms, how many, when it ended, from the
watch's start); one over ${SLOW_SCAVENGE_MS} ms is the slow state a process has been met in. With
\`--heap-watch DIR\`, the first such window has that process's heap captured, then another's beside it.

| Engine | Process | Scavenges | Mean ms | Slowest window, mean ms | Major GCs | Mean ms | Heap captured |
| --- | --- | ---: | ---: | --- | ---: | ---: | --- |
${rows.map((row) => `| ${row} |`).join('\n')}
`
}
