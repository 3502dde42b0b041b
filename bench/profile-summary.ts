import { readFileSync } from 'node:fs'

/**
 * Summarizes what a profiling run of the bench wrote (see docs/benchmarks.md, "Profiling"): the functions
 * with the most self time in a `--cpu-prof` profile, and the collections in a `--trace-gc` trace.
 *
 * Usage: node bench/profile-summary.ts <file.cpuprofile> [service-stdout.txt] [--top N]
 */

interface ProfileNode {
  id: number
  callFrame: { functionName: string; url: string; lineNumber: number }
  children?: number[]
}

interface Profile {
  nodes: ProfileNode[]
  samples: number[]
  timeDeltas: number[]
}

function shortUrl(url: string): string {
  const match = /(?:node_modules\/(.+)|\/(src\/.+|bench\/.+))$/.exec(url)
  return match?.[1] ?? match?.[2] ?? url.replace(/^file:\/\//, '')
}

function selfTimes(profile: Profile): { name: string; ms: number }[] {
  const frames = new Map(profile.nodes.map((node) => [node.id, node.callFrame]))
  const byFunction = new Map<string, number>()
  profile.samples.forEach((id, index) => {
    const frame = frames.get(id)
    if (frame === undefined) return
    const where = frame.url === '' ? '' : ` ${shortUrl(frame.url)}:${frame.lineNumber + 1}`
    const name = `${frame.functionName || '(anonymous)'}${where}`
    byFunction.set(name, (byFunction.get(name) ?? 0) + (profile.timeDeltas[index] ?? 0) / 1000)
  })
  return [...byFunction].map(([name, ms]) => ({ name, ms })).sort((a, b) => b.ms - a.ms)
}

// `[pid:0x…]  1234 ms: Scavenge 10.1 (12.3) -> 9.8 (12.3) MB, pooled: 0 MB, 0.45 / 0.00 ms …`
const GC_LINE =
  /: (Scavenge|Mark-Compact|Mark-sweep|Minor Mark-Sweep)\b.*?MB, (?:pooled: [\d.]+ MB, )?([\d.]+) \/ [\d.]+ ms/

function gcSummary(trace: string): string[] {
  const kinds = new Map<string, number[]>()
  for (const line of trace.split('\n')) {
    const match = GC_LINE.exec(line)
    if (!match?.[1] || !match[2]) continue
    kinds.set(match[1], [...(kinds.get(match[1]) ?? []), Number(match[2])])
  }
  return [...kinds].map(([kind, pauses]) => {
    const sorted = [...pauses].sort((a, b) => a - b)
    const total = pauses.reduce((sum, pause) => sum + pause, 0)
    const p99 = sorted[Math.floor(sorted.length * 0.99)] ?? 0
    return `${kind}: ${pauses.length}, total ${total.toFixed(0)} ms, mean ${(total / pauses.length).toFixed(2)} ms, p99 ${p99.toFixed(2)} ms, max ${(sorted.at(-1) ?? 0).toFixed(2)} ms`
  })
}

const args = process.argv.slice(2)
const topIndex = args.indexOf('--top')
const top = topIndex === -1 ? 25 : Number(args[topIndex + 1])
const [profilePath, tracePath] =
  topIndex === -1 ? args : args.filter((_arg, index) => index !== topIndex && index !== topIndex + 1)
if (profilePath === undefined) {
  process.stderr.write('usage: node bench/profile-summary.ts <file.cpuprofile> [stdout.txt] [--top N]\n')
  process.exit(2)
}
const profile = JSON.parse(readFileSync(profilePath, 'utf8')) as Profile
const times = selfTimes(profile)
const total = times.reduce((sum, entry) => sum + entry.ms, 0)
// Shares of the time the process was busy: idle time depends on how long it waited for load.
const busy = times.filter((entry) => entry.name !== '(idle)')
const busyMs = busy.reduce((sum, entry) => sum + entry.ms, 0)
process.stdout.write(`${total.toFixed(0)} ms sampled, ${busyMs.toFixed(0)} ms busy; % of busy time:\n`)
for (const { name, ms } of busy.slice(0, top)) {
  process.stdout.write(`${((100 * ms) / busyMs).toFixed(1).padStart(5)} %  ${name}\n`)
}
if (tracePath !== undefined) {
  for (const line of gcSummary(readFileSync(tracePath, 'utf8'))) process.stdout.write(`${line}\n`)
}
