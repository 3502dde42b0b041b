import type { Redis } from 'ioredis'
import type { Logger } from 'pino'
import { refusedCertificate } from '../../certificate-refusal.ts'
import { COMMAND_TIMED_OUT, keepInStep, OUT_OF_STEP, type ReplySteps, Steps } from './redis-reply-steps.ts'

/** A Redis client for shared rate-limit counts, and how its replies keep step with its commands. */
export interface RedisConnection {
  client: Redis
  steps: ReplySteps
  /** Since when Redis takes connections but answers no count (set by the counter, which says so). */
  silence: { since: number | undefined }
}

/**
 * A Redis client for shared rate-limit counters, set to fail fast (no offline queue, one attempt per
 * command) and to reconnect in the background; loaded only when Redis is configured (docs/decisions.md,
 * "Redis that is away, hung or out of step").
 */
export async function connectRedis(
  url: string,
  log: Pick<Logger, 'error' | 'warn' | 'info'>,
): Promise<RedisConnection> {
  const { Redis } = await import('ioredis')
  const steps = new Steps(log)
  const redis = new Redis(url, {
    connectTimeout: 500,
    commandTimeout: 500,
    // A count under way when its connection drops fails then (served uncounted), rather than wait out
    // the command timeout on a connection that will never answer it.
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    // A count left unanswered on a dropped connection was served uncounted already: sent again on the next
    // one, a Redis that had it too (hung, not gone) would count it twice.
    autoResendUnfulfilledCommands: false,
    // A connection dropped for replies out of step was ready first, which restarts `attempt` at 1.
    retryStrategy: (attempt) => Math.min((attempt + steps.droppedInARow) * 200, 2000),
  })
  keepInStep(redis, log, steps)
  const first = await firstOutcome(redis)
  const refused = first && settingRefused(first, url)
  if (refused !== undefined) {
    // What the closing connection still reports (its ready check cut short) is no news: said already.
    redis.on('error', () => {})
    redis.disconnect()
    throw new Error(`REDIS_URL: ${refused.atStart}`)
  }
  const silence = { since: undefined }
  logOutages(redis, url, log, first, steps, silence)
  return { client: redis, steps, silence }
}

// Redis's replies to a missing or wrong password (`ERR invalid password` from Redis before 6).
const CREDENTIALS_REFUSED = /^(NOAUTH|WRONGPASS|ERR invalid password)\b/

/**
 * The reply's first word when `error` is Redis refusing the credentials, else undefined: only that word
 * is said, no part of the URL, which holds the password.
 */
function credentialsRefused(error: Error): string | undefined {
  return CREDENTIALS_REFUSED.test(error.message) ? error.message.split(' ')[0] : undefined
}

// The client's words for a reply no Redis sends (an HTTP server's `HTTP/1.1 …`): REDIS_URL names another
// kind of server, which no reconnect mends.
const NOT_REDIS = /^(Unknown RESP type|Protocol error)\b/

// Redis's reply to SELECT of a database it does not have (REDIS_URL's path: `redis://host:6379/99`).
const NO_DATABASE = /^ERR (DB index is out of range|invalid DB index)/

/**
 * What to say when `error` is a setting to correct, which no reconnect mends: a server that is no Redis,
 * credentials Redis refuses, a database it does not have, or a TLS certificate this process does not
 * trust. Undefined for an outage.
 */
function settingRefused(
  error: Error,
  url: string,
): { atStart: string; later: string; code: string; endsClient?: true } | undefined {
  if (NOT_REDIS.test(error.message)) {
    return {
      code: 'NOT_REDIS',
      atStart:
        'the server it names does not answer as Redis does (another service at that port?): name a Redis',
      later:
        'the server REDIS_URL names does not answer as Redis does: rate limits are not counted until it does',
    }
  }
  if (NO_DATABASE.test(error.message)) {
    // Only the database is said: the URL may hold a password.
    const parsed = URL.canParse(url) ? new URL(url) : undefined
    const database = parsed?.pathname.slice(1) || parsed?.searchParams.get('db') || '?'
    return {
      code: 'ERR',
      atStart: `Redis has no database ${database} (${error.message}): name one it has, from 0`,
      // The client would go on to count in database 0 (its failed SELECT does not stop its ready check).
      later: `Redis has no database ${database}: rate limits are not counted until the service restarts with a REDIS_URL naming one`,
      endsClient: true,
    }
  }
  const credentials = credentialsRefused(error)
  if (credentials !== undefined) {
    return {
      code: credentials,
      atStart: `Redis refused its credentials (${credentials}): give the user and password it expects`,
      later:
        'Redis refuses the credentials REDIS_URL gives: rate limits are not counted until they are corrected',
    }
  }
  const certificate = refusedCertificate(error)
  if (certificate === undefined) return undefined
  const remedy = certificate.unsigned ? ': NODE_EXTRA_CA_CERTS must name the CA that signed it' : ''
  return {
    code: certificate.code,
    atStart: `Redis's TLS certificate ${certificate.problem} (${certificate.code})${remedy}`,
    later: `Redis's TLS certificate ${certificate.problem}: rate limits are not counted until it is mended`,
  }
}

// Longer than the connect timeout: a Redis that does not answer in time is an outage, met at start.
const FIRST_OUTCOME_MS = 1000

/**
 * How the first connection ends: undefined once ready (or still trying after FIRST_OUTCOME_MS), else its
 * error. A setting to correct (`settingRefused`) stops the start, where an unreachable Redis is an outage
 * the service rides out, counting nothing until it is back.
 */
function firstOutcome(redis: Redis): Promise<Error | undefined> {
  return new Promise((resolve) => {
    const done = (error?: Error) => {
      clearTimeout(timer)
      redis.off('ready', onReady)
      redis.off('error', done)
      resolve(error)
    }
    const onReady = () => done()
    const timer = setTimeout(done, FIRST_OUTCOME_MS)
    redis.on('ready', onReady)
    redis.on('error', done)
  })
}

/**
 * One line when Redis becomes unreachable (with the error's stack) and one when it is back: the client
 * retries every 2 s at most for as long as an outage lasts, and a line per attempt says nothing new.
 * `first`: the error the first connection met, an outage from the start.
 */
function logOutages(
  redis: Redis,
  url: string,
  log: Pick<Logger, 'error' | 'warn' | 'info'>,
  first: Error | undefined,
  steps: Steps,
  silence: RedisConnection['silence'],
): void {
  let downSince: number | undefined
  let refusedSaid = false
  const down = (error: Error) => {
    // Reachable, said by keepInStep; so is what a connection it drops still reports (its ready check).
    if (steps.dropping || OUT_OF_STEP.test(error.message)) return
    // A Redis that hangs, said by the counter: the new connection it asked for times out its ready check.
    if (silence.since !== undefined && error.message === COMMAND_TIMED_OUT) return
    // Refused later (not up yet at start, or its password or certificate changed since): a setting to
    // correct, said once until Redis takes it again; Redis is up, so it is not said to be unreachable.
    const refused = settingRefused(error, url)
    if (refused !== undefined) {
      if (!refusedSaid) log.error({ code: refused.code }, refused.later)
      refusedSaid = true
      if (refused.endsClient) redis.disconnect()
      downSince ??= performance.now()
      return
    }
    if (downSince !== undefined) return
    downSince = performance.now()
    log.warn({ err: error }, 'Redis is unreachable: rate limits are not counted until it is back')
  }
  if (first !== undefined) down(first)
  redis.on('error', down)
  redis.on('ready', () => {
    refusedSaid = false
    if (downSince === undefined) return
    log.info(
      { downMs: Math.round(performance.now() - downSince) },
      'Redis is reachable again: rate limits are counted',
    )
    downSince = undefined
  })
}
