import { readdirSync, readFileSync } from 'node:fs'

/** The processes whose parent is `pid` (from /proc; a server's backends, a supervisor's workers). */
export function childrenOf(pid: number): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((entry) => {
      try {
        // Field 4 of stat is the parent; the command name before it (in parentheses) may hold spaces.
        const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
        return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid
      } catch {
        return false
      }
    })
    .map(Number)
}

/** Whether a process with this pid is there: a signal 0 reaches it, or is refused (EPERM: another user's). */
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}
