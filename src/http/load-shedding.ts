import { monitorEventLoopDelay } from 'node:perf_hooks'
import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify'
import { ApiError } from '../errors.ts'

/** `MAX_EVENT_LOOP_DELAY_MS` and `MAX_HEAP_USED_BYTES`; 0 switches either measure off. */
export interface LoadSheddingLimits {
  maxEventLoopDelayMs: number
  maxHeapUsedBytes: number
}

// The delay histogram's own timer period (ms): its samples include it, so it is taken off the mean.
const RESOLUTION_MS = 10

// One answer for every shed request, logged per condition, at warn (condition-log.ts); not frozen, as pino's
// error serializer marks an error while writing it.
const OVERLOADED = new ApiError('service_unavailable', 'the service is overloaded; retry shortly', {
  'retry-after': '1',
})

/**
 * Overload shedding, registered in the /v1 scope only (probes and the document always answer): above
 * MAX_EVENT_LOOP_DELAY_MS of event-loop delay (the mean over the last sample interval) or
 * MAX_HEAP_USED_BYTES, new requests get 503 with Retry-After at once, instead of queueing until every
 * client times out.
 *
 * The measure is @fastify/under-pressure's, which this replaces: that plugin builds Fastify's route
 * options object on every request to look for a per-route handler; here the hook reads one flag that a
 * timer keeps up to date (docs/decisions.md, "Per-request cost").
 */
export function registerLoadShedding(
  app: FastifyInstance,
  { maxEventLoopDelayMs: maxDelayMs, maxHeapUsedBytes: maxHeapBytes }: LoadSheddingLimits,
): void {
  if (maxDelayMs === 0 && maxHeapBytes === 0) return

  const delays = monitorEventLoopDelay({ resolution: RESOLUTION_MS })
  let overloaded = false
  function sample(): void {
    // No sample at all means the loop was held for the whole interval.
    const delayMs =
      delays.count === 0 ? Number.POSITIVE_INFINITY : Math.max(0, delays.mean / 1e6 - RESOLUTION_MS)
    delays.reset()
    overloaded =
      (maxDelayMs > 0 && delayMs > maxDelayMs) ||
      (maxHeapBytes > 0 && process.memoryUsage().heapUsed > maxHeapBytes)
  }
  // An interval with no delay sample counts as infinite delay, so the interval must be at least the limit:
  // with a shorter one, any stall longer than the interval would shed even though it stayed under
  // MAX_EVENT_LOOP_DELAY_MS. Never coarser than a quarter second either, so a low limit is noticed quickly.
  // Measured while the app is up, as the periodic jobs are (periodic-job.ts): nothing runs for an app that
  // is built but never started.
  let timer: NodeJS.Timeout | undefined
  app.addHook('onReady', async () => {
    delays.enable()
    timer = setInterval(sample, Math.max(250, maxDelayMs))
    timer.unref()
  })
  app.addHook('onClose', async () => {
    clearInterval(timer)
    delays.disable()
  })

  app.addHook(
    'onRequest',
    (_request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction) => {
      if (overloaded) done(OVERLOADED)
      else done()
    },
  )
}
