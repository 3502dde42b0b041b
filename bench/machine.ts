import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { cpus, loadavg, totalmem } from 'node:os'
import { fileURLToPath } from 'node:url'

const ROOT = fileURLToPath(new URL('..', import.meta.url))

export interface Environment {
  date: string
  node: string
  commit: string
  cores: number
  cpuModel: string
  memoryGiB: number
  /** 1-minute load average before the bench started: anything else busy on the machine skews the numbers. */
  loadAverage: number
}

function git(args: string[]): string | undefined {
  const result = spawnSync('git', args, { cwd: ROOT, encoding: 'utf8' })
  return result.status === 0 ? result.stdout.trim() : undefined
}

/** `abc1234`, with `+dirty` when the work tree differs from it (the numbers then belong to no commit). */
function commit(): string {
  const head = git(['rev-parse', '--short', 'HEAD']) ?? 'unknown'
  const status = git(['status', '--porcelain'])
  return status === undefined || status === '' ? head : `${head}+dirty`
}

function cpuModel(): string {
  try {
    const match = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))
    return match?.[1]?.trim() ?? 'unknown'
  } catch {
    return 'unknown'
  }
}

export function describeEnvironment(): Environment {
  return {
    date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    node: process.version,
    commit: commit(),
    // The machine's cores, not this process's affinity (the bench pins itself to the server core).
    cores: cpus().length,
    cpuModel: cpuModel(),
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    loadAverage: loadavg()[0] ?? Number.NaN,
  }
}

/** The command as it was typed, so the report says how to reproduce it. */
export function commandLine(args: string[]): string {
  if (process.env.npm_lifecycle_event === 'bench') {
    return args.length === 0 ? 'npm run bench' : `npm run bench -- ${args.join(' ')}`
  }
  return ['node', ...process.execArgv, 'bench/run-bench.ts', ...args].join(' ')
}
