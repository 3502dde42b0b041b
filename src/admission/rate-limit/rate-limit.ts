import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify'
import { ApiError } from '../../errors.ts'
import { integerText } from '../../http/integer-text.ts'
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
 * Last in each operation's admission hook: counts the request against its API key's window (never the
 * client's address), with RateLimit fields and 429 over the limit; fails open, but not for a key already
 * refused (docs/decisions.md, "Rate limit of our own", "Failing open, but not for a key already refused").
 */
export function rateLimitPerKey({ counter, max, windowMs, onUncounted }: RateLimitOptions): RateLimitHook {
  const limit = String(max)
  const refused = new RefusedKeys()

  function apply(reply: FastifyReply, window: WindowCount, done: HookHandlerDoneFunction): void {
    // Whole seconds, rounded up and never 0: a client told to retry in 0 s would retry at once.
    const reset = String(Math.max(1, Math.ceil(window.resetInMs / 1000)))
    if (window.count <= max) {
      // One by one: `reply.headers(object)` reads each value by a megamorphic keyed load (docs/decisions.md,
      // "Headers set one by one").
      reply
        .header('ratelimit-limit', limit)
        // Not `String()`: a new count each request, which V8 would keep in its number cache (integer-text.ts).
        .header('ratelimit-remaining', integerText(max - window.count))
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
    // Redis's count, which may fail: a key it refused stays refused meanwhile, as an outage does not lift
    // its limit (the in-memory counter never fails).
    const name = lastName
    counted.then(
      (window) => {
        if (window.count > max) refused.add(name, window.resetInMs)
        // Under its limit in Redis's window (one Redis started anew, its data lost): the refusal is stale.
        else if (refused.size > 0) refused.forget(name)
        apply(reply, window, done)
      },
      () => {
        const resetInMs = refused.leftMs(name)
        if (resetInMs !== undefined) return apply(reply, { count: max + 1, resetInMs }, done)
        onUncounted()
        done()
      },
    )
  }
}

// Keys over their limit remembered at most: past it the oldest is forgotten (and served while the counter
// fails, as every other key is).
const REFUSED_KEYS_KEPT = 10_000

/** Keys refused (429) in their current window, with when it ends: what the limit holds while Redis fails. */
class RefusedKeys {
  readonly #until = new Map<string, number>()

  add(name: string, resetInMs: number): void {
    this.#until.delete(name)
    this.#until.set(name, performance.now() + resetInMs)
    if (this.#until.size > REFUSED_KEYS_KEPT) this.#until.delete(this.#until.keys().next().value as string)
  }

  get size(): number {
    return this.#until.size
  }

  forget(name: string): void {
    this.#until.delete(name)
  }

  /** The time left in the window `name` was refused in, if it has not ended. */
  leftMs(name: string): number | undefined {
    const until = this.#until.get(name)
    if (until === undefined) return undefined
    const left = until - performance.now()
    if (left > 0) return left
    this.#until.delete(name)
    return undefined
  }
}
