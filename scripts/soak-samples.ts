/** Samples of the soaked process (memory, descriptors, WAL) and their growth over the run. */
import { readdirSync, readFileSync, readlinkSync, statSync } from 'node:fs'

export interface SoakSample {
  atS: number
  rssMiB: number
  heapUsedMiB: number
  /** Descriptors other than sockets: database files, pipes, event fds — what a leaked handle adds to. */
  openFiles: number
  /**
   * Sockets, reported but not bounded: they follow the client's concurrency (fetch opens a connection per
   * request in flight and keeps it idle for seconds), so a slow moment on a busy machine adds a dozen.
   */
  sockets: number
  walMiB: number
}

export const MiB = 1024 * 1024

function countDescriptors(pid: number): { openFiles: number; sockets: number } {
  let openFiles = 0
  let sockets = 0
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    let target: string
    try {
      target = readlinkSync(`/proc/${pid}/fd/${fd}`)
    } catch {
      continue // closed since the directory was read
    }
    if (target.startsWith('socket:')) sockets++
    else openFiles++
  }
  return { openFiles, sockets }
}

export function sampleProcess(pid: number, metricsText: string, walPath: string, atS: number): SoakSample {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const rssKiB = Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1] ?? Number.NaN)
  const heapUsed = Number(/^nodejs_heap_size_used_bytes (\S+)$/m.exec(metricsText)?.[1] ?? Number.NaN)
  let walBytes = 0
  try {
    walBytes = statSync(walPath).size
  } catch {
    // No WAL file yet.
  }
  return {
    atS,
    rssMiB: rssKiB / 1024,
    heapUsedMiB: heapUsed / MiB,
    ...countDescriptors(pid),
    walMiB: walBytes / MiB,
  }
}

/** What growthOf measures between the first and the last third of the samples. */
export interface SoakGrowth {
  heapFloorMiB: number
  rssMiB: number
  openFiles: number
  walMiB: number
  liveHeapMiB?: number
}

/** Growth between the first and the last third of the judged samples (floors for the heap, as GC saws it). */
export function growthOf(samples: SoakSample[]): SoakGrowth {
  const third = Math.max(1, Math.floor(samples.length / 3))
  const first = samples.slice(0, third)
  const last = samples.slice(-third)
  const floor = (list: SoakSample[], pick: (s: SoakSample) => number) => Math.min(...list.map(pick))
  const peak = (list: SoakSample[], pick: (s: SoakSample) => number) => Math.max(...list.map(pick))
  return {
    heapFloorMiB: floor(last, (s) => s.heapUsedMiB) - floor(first, (s) => s.heapUsedMiB),
    rssMiB: peak(last, (s) => s.rssMiB) - peak(first, (s) => s.rssMiB),
    openFiles: peak(last, (s) => s.openFiles) - peak(first, (s) => s.openFiles),
    walMiB: peak(last, (s) => s.walMiB) - peak(first, (s) => s.walMiB),
  }
}
