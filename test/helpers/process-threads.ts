import { readdirSync, readFileSync } from 'node:fs'

/** The ids of process `pid`'s threads named `name` now (Node's platform names V8's helpers `V8Worker`). */
function threadsNamed(pid: number, name: string): string[] {
  return readdirSync(`/proc/${pid}/task`).filter(
    (task) => readFileSync(`/proc/${pid}/task/${task}/comm`, 'utf8').trim() === name,
  )
}

/** How many of V8's helper threads (`V8Worker`, named by Node's platform) process `pid` runs now. */
export function v8HelperThreads(pid: number): number {
  return threadsNamed(pid, 'V8Worker').length
}

/** A thread's nice value: the 19th field of its `stat`, counted after the name's closing parenthesis. */
function niceOf(pid: number, task: string): number {
  const stat = readFileSync(`/proc/${pid}/task/${task}/stat`, 'utf8')
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16])
}

/** The nice values of process `pid`'s main thread and of each of V8's helper threads. */
export function threadNiceValues(pid: number): { main: number; helpers: number[] } {
  return {
    main: niceOf(pid, String(pid)),
    helpers: threadsNamed(pid, 'V8Worker').map((task) => niceOf(pid, task)),
  }
}
