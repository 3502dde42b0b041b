import { spawnSync } from 'node:child_process'

/** Something a suite needs from the machine that is not there, and the command that provides it. */
export interface Lack {
  /** What is missing: "no redis-server on this machine". */
  missing: string
  /** The command that installs or provides it: "apt-get install redis-server". */
  remedy: string
}

/**
 * `describe` options for a suite that needs something from the machine: none when nothing is lacking.
 * Otherwise the suite is skipped, and the test reporter shows one line naming what is missing and the
 * command that provides it; under CI=true that throws instead, since CI must run every suite.
 */
export function suiteNeeding(suite: string, lack: Lack | undefined): { skip?: string } {
  if (lack === undefined) return {}
  const reason = `${lack.missing}; to run it: ${lack.remedy}`
  if (process.env.CI === 'true') throw new Error(`CI must run ${suite}: ${reason}`)
  return { skip: reason }
}

/** Whether a command of that name is on PATH. */
export function hasCommand(name: string): boolean {
  return spawnSync('sh', ['-c', 'command -v "$1"', 'sh', name]).status === 0
}

/** `describe` options for a suite that sets a process's limits with `prlimit` (util-linux). */
export function suiteNeedingPrlimit(suite: string): { skip?: string } {
  return suiteNeeding(
    suite,
    hasCommand('prlimit')
      ? undefined
      : { missing: 'no prlimit on this machine', remedy: 'apt-get install util-linux' },
  )
}
