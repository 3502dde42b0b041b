import { readdirSync, readFileSync } from 'node:fs'

/** How many of V8's helper threads (`V8Worker`, named by Node's platform) process `pid` runs now. */
export function v8HelperThreads(pid: number): number {
  return readdirSync(`/proc/${pid}/task`).filter((task) =>
    readFileSync(`/proc/${pid}/task/${task}/comm`, 'utf8').startsWith('V8Worker'),
  ).length
}
