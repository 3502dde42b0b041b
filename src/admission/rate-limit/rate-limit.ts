import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify'
import { ApiError } from '../../errors.ts'
import type { KeyIdentity } from '../../store/store.ts'
import type { WindowCount, WindowCounter } from './window-counter.ts'

export interface RateLimitOptions {
  counter: WindowCounter
  /** Requests allowed to one API key per window. */
  max: number
  windowMs: number
  /** Told of each request served uncounted because the counter failed (the limit failing open). */
  onUncounted: () => void
}

export type RateLimitHook = (
  request: FastifyRequest,
  reply: FastifyReply,
  done: HookHandlerDoneFunction,
) => void

/**
 * Runs last in each operation's admission hook (admission.ts), after authentication: counts the request
 * against its API key's window (by the key's id, never the client's address, which a proxy hides and
 * anyone can vary). Every counted answer carries the IETF RateLimit header fields; over the limit, 429
 * `rate_limited` with Retry-After. When the counter fails (Redis unreachable), the request is served
 * uncounted and without those fields: the limit fails open, availability over strictness.
 *
 * A callback hook, not an async one: the in-memory counter answers at once, and a promise per request
 * would cost more than the counting.
 */
export function rateLimitPerKey({ counter, max, windowMs, onUncounted }: RateLimitOptions): RateLimitHook {
  const limit = String(max)

  function apply(reply: FastifyReply, window: WindowCount, done: HookHandlerDoneFunction): void {
    // Whole seconds, rounded up and never 0: a client told to retry in 0 s would retry at once.
    const reset = String(Math.max(1, Math.ceil(window.resetInMs / 1000)))
    if (window.count <= max) {
      // One by one: `reply.headers(object)` reads each value by a megamorphic keyed load (docs/decisions.md,
      // "Headers set one by one").
      reply
        .header('ratelimit-limit', limit)
        .header('ratelimit-remaining', String(max - window.count))
        .header('ratelimit-reset', reset)
      done()
      return
    }
    done(
      new ApiError(
        'rate_limited',
        `more than ${max} requests per ${windowMs / 1000} s with this API key; retry in ${reset} s`,
        {
          'ratelimit-limit': limit,
          'ratelimit-remaining': '0',
          'ratelimit-reset': reset,
          'retry-after': reset,
        },
      ),
    )
  }

  // The counter's name for the last key seen, as the next request nearly always comes with the same key
  // (the same object, from the key cache): no id turned into text, nor its text hashed, per request.
  let lastKey: KeyIdentity | undefined
  let lastName = ''
  return function limitRate(request, reply, done) {
    // Authentication ran first and refused every request without a key.
    const key = request.apiKey
    if (key === null) return done()
    if (key !== lastKey) {
      lastName = `key:${key.id}`
      lastKey = key
    }
    const counted = counter.increment(lastName, windowMs)
    if (!(counted instanceof Promise)) return apply(reply, counted, done)
    counted.then(
      (window) => apply(reply, window, done),
      () => {
        onUncounted()
        done()
      },
    )
  }
}
