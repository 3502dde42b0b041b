import { readdirSync, readFileSync } from 'node:fs'

// /proc/<pid>/stat counts CPU time in clock ticks; Linux's user-visible tick is 100 per second.
const MICROSECONDS_PER_TICK = 10_000

function childPids(pid: number): number[] {
  return readdirSync(`/proc/${pid}/task`).flatMap((task) =>
    readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').split(' ').filter(Boolean).map(Number),
  )
}

function ownPeakRssKiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const match = /^VmHWM:\s+(\d+) kB$/m.exec(status)
  return match ? Number(match[1]) : Number.NaN
}

/** The peak resident set of a process and all its descendants (WORKERS), summed: an upper bound. */
export function peakRssKiB(pid: number): number {
  return ownPeakRssKiB(pid) + childPids(pid).reduce((sum, child) => sum + peakRssKiB(child), 0)
}

function ownCpuTimeUs(pid: number): number {
  // Fields after the command name, which is in parentheses and may itself hold spaces.
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  const userTicks = Number(fields[11])
  const systemTicks = Number(fields[12])
  return (userTicks + systemTicks) * MICROSECONDS_PER_TICK
}

/** CPU time used so far by a process and all its descendants, every thread included, in microseconds. */
export function cpuTimeUs(pid: number): number {
  return ownCpuTimeUs(pid) + childPids(pid).reduce((sum, child) => sum + cpuTimeUs(child), 0)
}
