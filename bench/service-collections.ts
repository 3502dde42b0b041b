import { readdirSync, readFileSync, readlinkSync } from 'node:fs'

/** A serving process's garbage collections so far, as its own metrics count them. */
export interface Collections {
  scavenges: number
  scavengeSeconds: number
  majors: number
  majorSeconds: number
  residentBytes: number
}

const figure = (text: string, name: string): number | undefined => {
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${name} `))
  return line === undefined ? undefined : Number(line.slice(name.length + 1))
}

/** The collections a Prometheus text shows (the service's `nodejs_gc_duration_seconds`), if it shows them. */
export function parseCollections(text: string): Collections | undefined {
  const values = [
    figure(text, 'nodejs_gc_duration_seconds_count{kind="minor"}'),
    figure(text, 'nodejs_gc_duration_seconds_sum{kind="minor"}'),
    figure(text, 'nodejs_gc_duration_seconds_count{kind="major"}') ?? 0,
    figure(text, 'nodejs_gc_duration_seconds_sum{kind="major"}') ?? 0,
    figure(text, 'process_resident_memory_bytes'),
  ]
  if (values.some((value) => value === undefined || !Number.isFinite(value))) return undefined
  const [scavenges, scavengeSeconds, majors, majorSeconds, residentBytes] = values as number[]
  return { scavenges, scavengeSeconds, majors, majorSeconds, residentBytes } as Collections
}

/**
 * The TCP ports `pid` listens on, from /proc: the service's metrics listener takes a free port
 * (`METRICS_PORT=0`, so a running service cannot block the bench), which only the kernel then knows.
 */
export function listeningPorts(pid: number): number[] {
  const inodes = new Set<string>()
  let fds: string[]
  try {
    fds = readdirSync(`/proc/${pid}/fd`)
  } catch {
    return [] // It has exited.
  }
  for (const fd of fds) {
    try {
      const target = readlinkSync(`/proc/${pid}/fd/${fd}`)
      if (target.startsWith('socket:[')) inodes.add(target.slice(8, -1))
    } catch {
      // Closed since it was listed.
    }
  }
  const ports = new Set<number>()
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string
    try {
      text = readFileSync(table, 'utf8')
    } catch {
      continue
    }
    // `sl local_address rem_address st … uid timeout inode`: 0A is LISTEN.
    for (const row of text.split('\n').slice(1)) {
      const fields = row.trim().split(/\s+/)
      if (fields[3] === '0A' && inodes.has(fields[9] as string)) {
        ports.add(Number.parseInt((fields[1] as string).split(':')[1] as string, 16))
      }
    }
  }
  return [...ports].sort((a, b) => a - b)
}

/** The collections read from `origin`'s /metrics, or undefined if it cannot be read. */
export async function readCollections(origin: string): Promise<Collections | undefined> {
  try {
    const response = await fetch(`${origin}/metrics`, { signal: AbortSignal.timeout(2000) })
    return response.ok ? parseCollections(await response.text()) : undefined
  } catch {
    return undefined
  }
}

/** The origin of the metrics listener of the service `pid` whose API is on `apiPort`, if it has one. */
export async function findMetricsOrigin(pid: number, apiPort: number): Promise<string | undefined> {
  for (const port of listeningPorts(pid)) {
    if (port === apiPort) continue
    const origin = `http://127.0.0.1:${port}`
    if ((await readCollections(origin)) !== undefined) return origin
  }
  return undefined
}
