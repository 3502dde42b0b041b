import { createWriteStream, writeFileSync } from 'node:fs'
import { setTimeout as sleep } from 'node:timers/promises'

// Where `SIGUSR1` opens a Node.js process's inspector (its default host and port).
const INSPECTOR = 'http://127.0.0.1:9229'
// V8's default sampling interval is 32 KiB; half of it, for a minute's young objects.
const SAMPLING_INTERVAL_BYTES = 16_384

/** The files one capture wrote, by what each holds. */
export interface HeapCapture {
  allocations: string
  live: string
  snapshot: string
}

async function inspectorTarget(): Promise<string> {
  for (let attempt = 0; attempt < 50; attempt++) {
    await sleep(200)
    try {
      const list = (await (await fetch(`${INSPECTOR}/json/list`)).json()) as {
        webSocketDebuggerUrl: string
      }[]
      if (list[0] !== undefined) return list[0].webSocketDebuggerUrl
    } catch {
      // Not open yet.
    }
  }
  throw new Error(`no inspector answered on ${INSPECTOR} within 10 s`)
}

/**
 * A running Node.js process's heap, through the inspector `SIGUSR1` opens: a sampling profile of every
 * allocation for `sampleS` seconds (the collected ones included), one of what stays alive for as long, then a
 * heap snapshot; the inspector is closed again. Files go to `prefix` + `-allocations.heapprofile`,
 * `-live.heapprofile` and `.heapsnapshot` (DevTools reads all three). One process at a time: the port is one.
 */
export async function captureHeap(pid: number, prefix: string, sampleS: number): Promise<HeapCapture> {
  process.kill(pid, 'SIGUSR1')
  const socket = new WebSocket(await inspectorTarget())
  await new Promise((resolve, reject) => {
    socket.onopen = resolve
    socket.onerror = () => reject(new Error(`the inspector of ${pid} refused its WebSocket`))
  })
  type Answer = { resolve: (result: Record<string, unknown>) => void; reject: (error: Error) => void }
  const pending = new Map<number, Answer>()
  let snapshotOut: ReturnType<typeof createWriteStream> | undefined
  socket.onmessage = (event) => {
    const message = JSON.parse(String(event.data))
    if (message.method === 'HeapProfiler.addHeapSnapshotChunk') snapshotOut?.write(message.params.chunk)
    else if (message.error !== undefined) pending.get(message.id)?.reject(new Error(message.error.message))
    else pending.get(message.id)?.resolve(message.result ?? {})
  }
  // A process that exits (or closes its inspector) mid-capture fails the capture, never hangs it.
  socket.onclose = () => {
    for (const { reject } of pending.values()) reject(new Error(`the inspector of ${pid} closed`))
    pending.clear()
  }
  let lastId = 0
  const call = (method: string, params: Record<string, unknown> = {}) =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      if (socket.readyState !== WebSocket.OPEN) return reject(new Error(`the inspector of ${pid} closed`))
      lastId++
      pending.set(lastId, { resolve, reject })
      socket.send(JSON.stringify({ id: lastId, method, params }))
    })
  // The port is shared: another process's inspector there (one started with --inspect) is left alone.
  const { result } = await call('Runtime.evaluate', { expression: 'process.pid' })
  const owner = (result as { value?: unknown } | undefined)?.value
  if (owner !== pid) {
    socket.close()
    throw new Error(`the inspector on 127.0.0.1:9229 is another process's (pid ${owner}), not ${pid}'s`)
  }
  const files = {
    allocations: `${prefix}-allocations.heapprofile`,
    live: `${prefix}-live.heapprofile`,
    snapshot: `${prefix}.heapsnapshot`,
  }
  try {
    await call('HeapProfiler.enable')
    const collectedToo = { includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true }
    await call('HeapProfiler.startSampling', { samplingInterval: SAMPLING_INTERVAL_BYTES, ...collectedToo })
    await sleep(sampleS * 1000)
    writeFileSync(files.allocations, JSON.stringify((await call('HeapProfiler.stopSampling')).profile))
    await call('HeapProfiler.startSampling', { samplingInterval: SAMPLING_INTERVAL_BYTES })
    await sleep(sampleS * 1000)
    writeFileSync(files.live, JSON.stringify((await call('HeapProfiler.stopSampling')).profile))
    const out = createWriteStream(files.snapshot)
    snapshotOut = out
    await call('HeapProfiler.takeHeapSnapshot', { reportProgress: false })
    await new Promise((resolve) => out.end(resolve))
  } finally {
    // Closed from inside, after this answer: the process is left as it was, no port open.
    const close = "setTimeout(() => process.getBuiltinModule('node:inspector').close(), 100)"
    await call('Runtime.evaluate', { expression: close }).catch(() => undefined)
    socket.close()
    await sleep(500)
  }
  return files
}
