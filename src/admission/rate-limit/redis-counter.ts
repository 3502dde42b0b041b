import type { Redis } from 'ioredis'
import type { WindowCount, WindowCounter } from './window-counter.ts'

// One round trip, atomic on the server: the first request of a window sets its expiry, and a count found
// without one gets it, so no key can stay over its limit for ever.
const INCREMENT = `
local count = redis.call('INCR', KEYS[1])
local ttl = tonumber(ARGV[1])
if count == 1 then
  redis.call('PEXPIRE', KEYS[1], ttl)
else
  ttl = redis.call('PTTL', KEYS[1])
  if ttl < 0 then
    ttl = tonumber(ARGV[1])
    redis.call('PEXPIRE', KEYS[1], ttl)
  end
end
return {count, ttl}
`
const COMMAND = 'petstoreRateLimitIncrement'

type WithIncrement = Redis &
  Record<typeof COMMAND, (key: string, windowMs: number) => Promise<[number, number]>>

/** Counts in Redis, so every instance shares one count per key. Keys are `<prefix><key>`. */
export class RedisWindowCounter implements WindowCounter {
  readonly #redis: WithIncrement
  readonly #prefix: string

  constructor(redis: Redis, prefix: string) {
    // ioredis sends the script by its digest, and the script itself only when Redis does not know it yet.
    if (!(COMMAND in redis)) redis.defineCommand(COMMAND, { numberOfKeys: 1, lua: INCREMENT })
    this.#redis = redis as WithIncrement
    this.#prefix = prefix
  }

  async increment(key: string, windowMs: number): Promise<WindowCount> {
    const [count, resetInMs] = await this.#redis[COMMAND](`${this.#prefix}${key}`, windowMs)
    return { count, resetInMs }
  }
}
