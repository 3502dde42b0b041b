import rateLimit from '@fastify/rate-limit'
import underPressure from '@fastify/under-pressure'
import type { FastifyInstance } from 'fastify'
import type { Redis } from 'ioredis'
import type { Config } from '../config.ts'
import { ApiError } from '../errors.ts'

export interface TrafficLimitsOptions {
  config: Config
  /** Shared counters for every instance; without it, each instance counts alone, in memory. */
  redis?: Redis
}

/**
 * Registered in the /v1 scope only (probes and the document are never limited):
 * - overload shedding: above MAX_EVENT_LOOP_DELAY_MS of event-loop delay (or MAX_HEAP_USED_BYTES) new
 *   requests get 503 with Retry-After at once, instead of queueing until every client times out;
 * - a per-API-key rate limit, counted after authentication (the key's id, not the client's IP, which a
 *   proxy hides and anyone can vary), answered with 429 and the IETF RateLimit headers. When Redis is
 *   unreachable the limit fails open: requests are served uncounted rather than refused.
 */
export async function registerTrafficLimits(app: FastifyInstance, { config, redis }: TrafficLimitsOptions) {
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
  if (config.RATE_LIMIT_PER_MINUTE === 0) return
  await app.register(rateLimit, {
    global: true,
    max: config.RATE_LIMIT_PER_MINUTE,
    timeWindow: 60_000,
    hook: 'preParsing',
    keyGenerator: (request) => (request.apiKey ? `key:${request.apiKey.id}` : `ip:${request.ip}`),
    ...(redis ? { redis, nameSpace: 'petstore:rate-limit:' } : {}),
    skipOnError: true,
    enableDraftSpec: true,
    errorResponseBuilder: (_request, context) =>
      new ApiError(
        'rate_limited',
        `more than ${context.max} requests per minute with this API key; retry in ${context.after}`,
      ),
  })
}
