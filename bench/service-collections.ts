import { listeningPorts } from '../test/helpers/process-sockets.ts'

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

/** The collections read from `origin`'s /metrics, or undefined if it cannot be read. */
export async function readCollections(origin: string): Promise<Collections | undefined> {
  try {
    const response = await fetch(`${origin}/metrics`, { signal: AbortSignal.timeout(2000) })
    return response.ok ? parseCollections(await response.text()) : undefined
  } catch {
    return undefined
  }
}

/**
 * The origin of the metrics listener of the service `pid` whose API is on `apiPort`, if it has one: it takes
 * a free port (`METRICS_PORT=0`, so a running service cannot block the bench), which only the kernel knows.
 */
export async function findMetricsOrigin(pid: number, apiPort: number): Promise<string | undefined> {
  for (const port of listeningPorts(pid)) {
    if (port === apiPort) continue
    const origin = `http://127.0.0.1:${port}`
    if ((await readCollections(origin)) !== undefined) return origin
  }
  return undefined
}
