import { readdirSync, readFileSync } from 'node:fs'
import { setPriority } from 'node:os'

/** The nice value V8's helper threads are given: the lowest priority there is. */
export const V8_HELPER_NICE = 19

/**
 * Gives V8's helper threads (`V8Worker`: concurrent marking, sweeping and compiling) the lowest priority,
 * so that on a core they share with the event loop they take its spare time, not the requests'
 * (docs/decisions.md, "V8's helper threads yield to the requests"). On Linux, where a thread has a nice
 * value of its own; elsewhere, and for a thread that refuses, nothing changes. Returns how many it lowered.
 */
export function lowerV8HelperPriority(): number {
  if (process.platform !== 'linux') return 0
  let lowered = 0
  for (const task of readdirSync('/proc/self/task')) {
    try {
      if (readFileSync(`/proc/self/task/${task}/comm`, 'utf8').trimEnd() !== 'V8Worker') continue
      setPriority(Number(task), V8_HELPER_NICE)
      lowered++
    } catch {
      // Gone since the listing, or refused (a sandbox without setpriority): it keeps the priority it had.
    }
  }
  return lowered
}
