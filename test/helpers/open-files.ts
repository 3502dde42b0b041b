import { readdirSync, readlinkSync } from 'node:fs'

/** Whether process `pid` has `path` open (Linux: its /proc/PID/fd links). */
export function holdsOpen(pid: number | string | undefined, path: string): boolean {
  if (pid === undefined) return false
  try {
    return readdirSync(`/proc/${pid}/fd`).some((fd) => {
      try {
        return readlinkSync(`/proc/${pid}/fd/${fd}`) === path
      } catch {
        return false // closed since the listing
      }
    })
  } catch {
    return false // not started yet, gone, or not ours to read
  }
}

/** Whether a process other than this one has `path` open. */
export function openElsewhere(path: string): boolean {
  return readdirSync('/proc').some(
    (pid) => /^\d+$/.test(pid) && Number(pid) !== process.pid && holdsOpen(pid, path),
  )
}
