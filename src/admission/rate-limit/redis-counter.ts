import { type Redis, ReplyError } from 'ioredis'
import type { Logger } from 'pino'
import type { RedisConnection } from './redis-connection.ts'
import { COMMAND_TIMED_OUT, type ReplySteps } from './redis-reply-steps.ts'
import type { WindowCount, WindowCounter } from './window-counter.ts'

// One atomic round trip. The expiry is set on a window's first count and mended when missing or past the
// window, so no key stays over its limit beyond a window; a value that is no count starts again from 1
// (docs/decisions.md, "Redis that is away, hung or out of step").
const INCREMENT = `
local window = tonumber(ARGV[1])
local count = redis.pcall('INCR', KEYS[1])
if type(count) == 'table' and count.err then
  redis.call('SET', KEYS[1], 1, 'PX', window)
  return {1, window}
end
local ttl = window
if count == 1 then
  redis.call('PEXPIRE', KEYS[1], ttl)
else
  ttl = redis.call('PTTL', KEYS[1])
  if ttl < 0 or ttl > window then
    ttl = window
    redis.call('PEXPIRE', KEYS[1], ttl)
  end
end
return {count, ttl}
`
const COMMAND = 'petstoreRateLimitIncrement'
// While Redis does not answer, one request this often still asks it (and waits out the command timeout);
// the others are served at once, uncounted. One late answer (a latency spike) is not silence: two are, the
// second asked after the first was given up (the counts sent in one stall time out together).
const SILENT_RETRY_MS = 1000
const TIMEOUTS_TO_SILENCE = 2
const PASSED_BY = new Error('Redis does not answer: passed by until it is asked again')
const OUT_OF_STEP = new Error('Redis sends replies no command asked for: passed by until a count is in step')

type WithIncrement = Redis & Record<typeof COMMAND, (key: string, windowMs: number) => Promise<unknown>>

/**
 * Counts in Redis under `<prefix><key>`, so every instance shares one count per key. A Redis that hangs is
 * passed by after two timeouts and tried by one request a second; its errors are said once, as is its return
 * (docs/decisions.md, "Redis that is away, hung or out of step").
 */
export class RedisWindowCounter implements WindowCounter {
  readonly #redis: WithIncrement
  readonly #steps: ReplySteps
  readonly #prefix: string
  readonly #log: Pick<Logger, 'warn' | 'info'>
  readonly #silence: RedisConnection['silence']
  #refusingSince: number | undefined
  #askAgainAt = 0
  #timeoutsInARow = 0
  // When the last timeout that counted was met: those of counts sent before it belong to the same stall.
  #timedOutAt = Number.NEGATIVE_INFINITY

  constructor(
    { client: redis, steps, silence }: RedisConnection,
    prefix: string,
    log: Pick<Logger, 'warn' | 'info'>,
  ) {
    // ioredis sends the script by its digest, and the script itself only when Redis does not know it yet.
    if (!(COMMAND in redis)) redis.defineCommand(COMMAND, { numberOfKeys: 1, lua: INCREMENT })
    this.#redis = redis as WithIncrement
    this.#steps = steps
    this.#silence = silence
    this.#prefix = prefix
    this.#log = log
  }

  async increment(key: string, windowMs: number): Promise<WindowCount> {
    // While replies are out of step, one count a second still asks Redis: its answer is the only proof
    // that they are in step again, where the ready check may be answered in step and the count not.
    let probe: number | undefined
    if (this.#steps.outOfStepSince !== undefined) {
      probe = this.#steps.probe()
      if (probe === undefined) throw OUT_OF_STEP
    }
    if (this.#silence.since !== undefined) {
      const now = performance.now()
      if (now < this.#askAgainAt) throw PASSED_BY
      this.#askAgainAt = now + SILENT_RETRY_MS
    }
    let answer: unknown
    const connection = this.#redis.stream
    const sentAt = performance.now()
    try {
      answer = await this.#redis[COMMAND](`${this.#prefix}${key}`, windowMs)
    } catch (error) {
      if ((error as Error).message === COMMAND_TIMED_OUT) this.#timedOut(error, connection, sentAt)
      else if (error instanceof ReplyError) this.#refused(error)
      throw error
    }
    // Read among replies no command asked for (in the same read as they were), it may be one of them; so
    // may a probe's, which serves only as a proof, once no reply out of step follows it.
    if (this.#steps.outOfStepSince !== undefined) {
      if (probe !== undefined && isWindowCount(answer)) this.#steps.counted(probe)
      throw OUT_OF_STEP
    }
    // Redis, or something between, may answer with no count at all: a RateLimit field saying NaN, or a
    // 429 drawn from it, would be worse than none.
    if (!isWindowCount(answer)) {
      const error = new Error(`Redis answered the count with ${String(JSON.stringify(answer)).slice(0, 100)}`)
      this.#refused(error, 'Redis answers no count: rate limits are not counted until it does')
      throw error
    }
    this.#timeoutsInARow = 0
    if (this.#refusingSince !== undefined) {
      this.#log.info(
        { refusedMs: Math.round(performance.now() - this.#refusingSince) },
        'Redis counts again: rate limits are counted',
      )
      this.#refusingSince = undefined
    }
    if (this.#silence.since !== undefined) {
      this.#log.info(
        { silentMs: Math.round(performance.now() - this.#silence.since) },
        'Redis answers again: rate limits are counted',
      )
      this.#silence.since = undefined
    }
    const [count, resetInMs] = answer
    return { count, resetInMs }
  }

  // Reachable but refusing the script's writes (`OOM` at maxmemory, `READONLY` on a replica): no outage
  // the connection sees, so said here, once, with Redis's reply.
  #refused(error: unknown, line = 'Redis refuses to count: rate limits are not counted until it does'): void {
    if (this.#refusingSince !== undefined) return
    this.#refusingSince = performance.now()
    this.#log.warn({ err: error }, line)
  }

  /** A count sent on `connection` at `sentAt` timed out. */
  #timedOut(error: unknown, connection: unknown, sentAt: number): void {
    // Sent on a connection since dropped (Redis restarted, the connection killed), or before the last
    // timeout was met (the same stall): no further sign of silence.
    if (connection !== this.#redis.stream || sentAt < this.#timedOutAt) return
    this.#timedOutAt = performance.now()
    this.#timeoutsInARow++
    if (this.#timeoutsInARow < TIMEOUTS_TO_SILENCE) return
    // The connection may be what is silent (its peer gone without a reset, a failover that moved the
    // address), which the kernel gives up only after some 15 minutes: another is made, in the background.
    // Once: the other counts that timed out on it, and late ones, leave the next connection alone, and this
    // one too once its end is sent (each disconnect adds a listener to it: 11 at once made Node warn).
    if (this.#redis.status === 'ready' && !this.#redis.stream.writableEnded) this.#redis.disconnect(true)
    if (this.#silence.since !== undefined) return
    this.#askAgainAt = performance.now() + SILENT_RETRY_MS
    this.#silence.since = performance.now()
    this.#log.warn({ err: error }, 'Redis does not answer: rate limits are not counted until it does')
  }
}

/** Whether the script's answer is what it returns: a count from 1 and the window's time left, in ms. */
function isWindowCount(answer: unknown): answer is [number, number] {
  if (!Array.isArray(answer) || answer.length !== 2) return false
  const [count, resetInMs] = answer
  return Number.isSafeInteger(count) && count >= 1 && Number.isSafeInteger(resetInMs) && resetInMs >= 0
}
