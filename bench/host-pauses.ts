import { LOAD_CORE, runNodeForJson, SERVER_CORE } from './processes.ts'

// The host's own pauses, measured before the run: a loop that does nothing but read the clock, one on each
// core; a jump in the clock is time the core was taken away (a virtual machine's cores are, for ~100 ms at
// a time on some hosts), which a latency at a fixed rate shows for whichever target it falls on.

/** A jump of at least this many ms counts as a pause (a scheduler's tick is 1–4 ms). */
const PAUSE_MS = 20

// Run with `node -e`: prints the jumps, in ms, as a JSON array.
const probe = (seconds: number) => `
const end = performance.now() + ${seconds * 1000}
const jumps = []
for (let last = performance.now(), now = last; now < end; last = now) {
  now = performance.now()
  if (now - last >= ${PAUSE_MS}) jumps.push(Math.round(now - last))
}
process.stdout.write(JSON.stringify(jumps))`

/** The probe, running on `core` for `seconds`: its pid, and the jumps it saw, once it is done. */
export function watchPauses(
  core: number,
  seconds: number,
): { pid: number | undefined; pauses: Promise<number[]> } {
  const { pid, result } = runNodeForJson<number[]>(core, ['-e', probe(seconds)], 'host-pause probe')
  return { pid, pauses: result }
}

const times = (count: number) => (count === 1 ? 'once' : count === 2 ? 'twice' : `${count} times`)

/** A line for the report: how often each core paused, and for how long, in `seconds` of both at once. */
export async function hostPausesNote(seconds: number): Promise<string> {
  const cores = [SERVER_CORE, LOAD_CORE]
  const found = await Promise.all(cores.map((core) => watchPauses(core, seconds).pauses))
  const said = cores.map((core, at) => {
    const jumps = found[at] ?? []
    if (jumps.length === 0) return `core ${core} never`
    return `core ${core} ${times(jumps.length)} (${Math.min(...jumps)}–${Math.max(...jumps)} ms)`
  })
  return (
    `Host pauses: before the run, a loop reading the clock on each core, nothing else running, saw it jump by ${PAUSE_MS} ms or more: ` +
    `${said.join(', ')} in ${seconds} s. Each such pause is in the latency at a fixed rate of whatever target it falls on.`
  )
}
