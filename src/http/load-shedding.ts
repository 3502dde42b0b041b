import underPressure from '@fastify/under-pressure'
import type { FastifyInstance } from 'fastify'
import type { Config } from '../config.ts'

export interface LoadSheddingOptions {
  config: Pick<Config, 'MAX_EVENT_LOOP_DELAY_MS' | 'MAX_HEAP_USED_BYTES'>
}

/**
 * Overload shedding, registered in the /v1 scope only (probes and the document always answer): above
 * MAX_EVENT_LOOP_DELAY_MS of event-loop delay (or MAX_HEAP_USED_BYTES) new requests get 503 with
 * Retry-After at once, instead of queueing until every client times out.
 */
export async function registerLoadShedding(app: FastifyInstance, { config }: LoadSheddingOptions) {
  if (config.MAX_EVENT_LOOP_DELAY_MS > 0 || config.MAX_HEAP_USED_BYTES > 0) {
    await app.register(underPressure, {
      maxEventLoopDelay: config.MAX_EVENT_LOOP_DELAY_MS,
      maxHeapUsedBytes: config.MAX_HEAP_USED_BYTES,
      retryAfter: 1,
      // The plugin takes an interval with no delay sample at all (the loop was held the whole time) as
      // infinite delay, so the interval must be at least the limit: with a shorter one, any stall longer
      // than the interval would shed even though it stayed under MAX_EVENT_LOOP_DELAY_MS. Never coarser
      // than a quarter second either, so a low limit is noticed quickly.
      sampleInterval: Math.max(250, config.MAX_EVENT_LOOP_DELAY_MS),
    })
  }
}
