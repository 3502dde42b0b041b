import { monitorEventLoopDelay } from 'node:perf_hooks'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify'
import { serviceUnavailable } from '../errors.ts'

/** `MAX_EVENT_LOOP_DELAY_MS` and `MAX_HEAP_USED_BYTES`; 0 switches either measure off. */
export interface LoadSheddingLimits {
  maxEventLoopDelayMs: number
  maxHeapUsedBytes: number
}

/** Whether the process is overloaded now: the /v1 scope sheds new requests and /readyz says not ready. */
export interface LoadWatch {
  readonly overloaded: boolean
}

// The delay histogram's own timer period (ms): its samples include it, so it is taken off the mean.
const RESOLUTION_MS = 10
// How often the verdict is renewed: a stall that is over stops shedding within this (docs/decisions.md,
// "Load shedding").
const CHECK_EVERY_MS = 100
// A start whose loop never keeps time (an instance brought up into a flood) is judged from then on anyway.
const START_GRACE_MS = 10_000
// The limit an overload met is said at most this often.
const SAID_EVERY_MS = 60_000
// While the heap is over its limit, at most one full collection this often (see `heapInUse`).
const COLLECT_EVERY_MS = 5000

const NEVER_OVERLOADED: LoadWatch = Object.freeze({ overloaded: false })

// One answer for every shed request, logged per condition, at warn (condition-log.ts); not frozen, as pino's
// error serializer marks an error while writing it.
const OVERLOADED = serviceUnavailable('the service is overloaded; retry shortly')

/**
 * Watches the process from onReady to onClose: overloaded while the event-loop delay or the heap in use is
 * above its limit, judged from the first check that runs on time (docs/decisions.md, "Load shedding").
 */
export function watchLoad(
  app: FastifyInstance,
  { maxEventLoopDelayMs: maxDelayMs, maxHeapUsedBytes: maxHeapBytes }: LoadSheddingLimits,
): LoadWatch {
  if (maxDelayMs === 0 && maxHeapBytes === 0) return NEVER_OVERLOADED

  const delays = monitorEventLoopDelay({ resolution: RESOLUTION_MS })
  const watch = { overloaded: false }
  let judging = false
  let readyAt = 0
  let lastCheck = 0
  let saidAt = Number.NEGATIVE_INFINITY
  let collectedAt = Number.NEGATIVE_INFINITY
  /**
   * The heap in use; over the limit, as a full collection leaves it (once every COLLECT_EVERY_MS): a
   * burst's garbage is collected only when the process allocates again, which an idle one shedding
   * every request hardly does, so the live figure kept it out of rotation after the load had gone.
   */
  function heapInUse(now: number): number {
    const used = process.memoryUsage().heapUsed
    if (used <= maxHeapBytes || now - collectedAt < COLLECT_EVERY_MS) return used
    collectedAt = now
    collectGarbage()
    // The collection's pause is its own, not the loop's delay.
    lastCheck = performance.now()
    delays.reset()
    return process.memoryUsage().heapUsed
  }
  function check(): void {
    const now = performance.now()
    const lateMs = now - lastCheck - CHECK_EVERY_MS
    const meanMs = delays.count === 0 ? 0 : delays.mean / 1e6 - RESOLUTION_MS
    const delayMs = Math.max(0, lateMs, meanMs)
    lastCheck = now
    delays.reset()
    const delayed = maxDelayMs > 0 && delayMs > maxDelayMs
    judging ||= !delayed || now - readyAt >= START_GRACE_MS
    const heapUsedBytes = !delayed && maxHeapBytes > 0 ? heapInUse(now) : 0
    const overloaded = judging && (delayed || heapUsedBytes > maxHeapBytes)
    // The shed requests' condition says only that it is overloaded: this says which limit, and by how much,
    // once a minute at most (a heap about its limit, or bursts of stalls, go in and out many times).
    if (overloaded && !watch.overloaded && now - saidAt >= SAID_EVERY_MS) {
      saidAt = now
      if (delayed) {
        app.log.warn(
          { eventLoopDelayMs: Math.round(delayMs), maxEventLoopDelayMs: maxDelayMs },
          'overloaded: the event loop is behind by more than MAX_EVENT_LOOP_DELAY_MS',
        )
      } else {
        app.log.warn(
          { heapUsedBytes, maxHeapUsedBytes: maxHeapBytes },
          'overloaded: the heap in use is over MAX_HEAP_USED_BYTES',
        )
      }
    }
    watch.overloaded = overloaded
  }
  let timer: NodeJS.Timeout | undefined
  app.addHook('onReady', async () => {
    delays.enable()
    readyAt = lastCheck = performance.now()
    timer = setInterval(check, CHECK_EVERY_MS)
    timer.unref()
  })
  app.addHook('onClose', async () => {
    clearInterval(timer)
    delays.disable()
  })
  return watch
}

/**
 * Overload shedding, in the /v1 scope only: while the watch says overloaded, new requests get 503 with
 * Retry-After at once. The hook reads one flag a timer keeps (docs/decisions.md, "Load shedding of our own").
 */
export function shedWhenOverloaded(app: FastifyInstance, load: LoadWatch): void {
  if (load === NEVER_OVERLOADED) return
  app.addHook('onRequest', (request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction) => {
    // An OPTIONS is answered by its path's guard at no cost (a preflight 204, else 405): a browser whose
    // preflight failed could not read the 503's Retry-After on the call it was for.
    if (load.overloaded && request.method !== 'OPTIONS') done(OVERLOADED)
    else done()
  })
}

let collector: (() => void) | undefined

/** A full garbage collection, by V8's own `gc` (made reachable once, in a context of its own). */
function collectGarbage(): void {
  if (collector === undefined) {
    setFlagsFromString('--expose-gc')
    collector = runInNewContext('gc') as () => void
  }
  collector()
}
