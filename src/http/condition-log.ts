import type { FastifyBaseLogger, FastifyRequest } from 'fastify'
import type { Logger } from 'pino'
import {
  type ApiError,
  messageWithCause,
  NewerSchemaError,
  StoreUnavailableError,
  WriteInDoubtError,
} from '../errors.ts'

export interface ConditionLogOptions {
  /** A condition no request met for this long has passed, and its end is logged. */
  quietMs?: number
  /** While a condition lasts, a line saying so is written at most this often. */
  repeatMs?: number
  /** The most of a request's wait the quiet period is made to outlast (WAIT_COUNTED_MS by default). */
  waitCountedMs?: number
}

interface Condition {
  /** Ended by a ready probe (`passed`), not by a quiet spell; `forGood`: by nothing. */
  untilReady: boolean
  forGood: boolean
  since: number
  lastMet: number
  lastLogged: number
  /** Requests that met it, in all and since the last line. */
  met: number
  metSinceLogged: number
  /** The longest a request waited before it met it (a statement's timeout): the quiet must outlast it. */
  longestWaitMs: number
}

/** What a request that met a condition adds to its first line: the error (with its stack), a code, or both. */
export type ConditionDetail = { err: unknown; code?: string } | { code: string }

// The most of a request's wait a quiet period is made to outlast: its time includes a body's upload, which
// a client may trickle for as long as REQUEST_TIMEOUT_MS allows (without end, at 0); store calls end sooner.
const WAIT_COUNTED_MS = 60_000

// Ends with the process: a drain quiet for a while has not passed (request-lifecycle.ts answers it).
export const SHUTTING_DOWN_CONDITION = 'the service is shutting down'

// Readiness conditions are named "not ready: …" (routes/health.ts); probes, not traffic, meet them.
const isReadiness = (condition: string) => condition.startsWith('not ready:')

/**
 * Conditions that fail many requests at once are logged per condition, not per request: when one starts
 * (with its stack), every `repeatMs` while it lasts, and once no request met it for `quietMs` beyond the
 * longest wait (docs/decisions.md, "One line per request, one per condition").
 */
export class ConditionLog {
  readonly #log: FastifyBaseLogger
  readonly #quietMs: number
  readonly #repeatMs: number
  readonly #waitCountedMs: number
  readonly #conditions = new Map<string, Condition>()

  constructor(
    log: FastifyBaseLogger,
    { quietMs = 5000, repeatMs = 60_000, waitCountedMs = WAIT_COUNTED_MS }: ConditionLogOptions = {},
  ) {
    this.#log = log
    this.#quietMs = quietMs
    this.#repeatMs = repeatMs
    this.#waitCountedMs = waitCountedMs
  }

  /**
   * Records that the request `reqId` met `condition`, answered `status`; the start is logged at `level`,
   * with `detail`. A condition met `untilReady` ends only when `passed` says so: probes come every 5 to
   * 30 s, more sparsely than any quiet period, and each would otherwise start it again; `forGood`, never.
   */
  met(
    condition: string,
    level: 'error' | 'warn',
    detail: ConditionDetail,
    reqId: string,
    {
      untilReady = false,
      forGood = false,
      status = 503,
      waitedMs = 0,
    }: { untilReady?: boolean; forGood?: boolean; status?: number; waitedMs?: number } = {},
  ): void {
    const now = performance.now()
    const counted = Math.min(waitedMs, this.#waitCountedMs)
    const known = this.#conditions.get(condition)
    if (known === undefined) {
      const started: Condition = {
        untilReady,
        forGood,
        since: now,
        lastMet: now,
        lastLogged: now,
        met: 1,
        metSinceLogged: 0,
        longestWaitMs: counted,
      }
      this.#conditions.set(condition, started)
      // A readiness condition is met by probes; the others, by the requests they fail (a full disk, by
      // creates alone): each line says which, so that one read during a served drain is not an outage.
      const answered = isReadiness(condition)
        ? `/readyz answers ${status}`
        : `requests that meet it are answered ${status}`
      this.#log[level](
        { condition, reqId, ...detail },
        `${condition}: ${answered} ${forGood ? 'from now on' : 'until it passes'}`,
      )
      if (!untilReady && !forGood) this.#watch(condition, started, this.#quietMs)
      return
    }
    known.lastMet = now
    known.longestWaitMs = Math.max(known.longestWaitMs, counted)
    known.met++
    known.metSinceLogged++
    if (now - known.lastLogged < this.#repeatMs) return
    // The latest error's message, without its stack: the cause may have changed while the condition lasted.
    const { err, ...rest } = detail as { err?: unknown; code?: string }
    const latest =
      'err' in detail ? { ...rest, error: err instanceof Error ? messageWithCause(err) : undefined } : rest
    this.#log.warn(
      {
        condition,
        failedRequests: known.metSinceLogged,
        durationMs: Math.round(now - known.since),
        reqId,
        ...latest,
      },
      `${condition}: still failing requests`,
    )
    known.lastLogged = now
    known.metSinceLogged = 0
  }

  /** Ends now every open condition met `untilReady`, saying `why` it has passed. */
  passed(why: string): void {
    for (const [name, condition] of this.#conditions) {
      if (!condition.untilReady) continue
      this.#conditions.delete(name)
      this.#logPassed(name, condition, performance.now(), `passed (${why})`)
    }
  }

  /** `endedAt`: the probe that found it passed, or, after a quiet period, the last request it failed. */
  #logPassed(name: string, condition: Condition, endedAt: number, said: string): void {
    this.#log.warn(
      {
        condition: name,
        failedRequests: condition.met,
        durationMs: Math.round(endedAt - condition.since),
      },
      `${name}: ${said}`,
    )
  }

  /** Checks, `afterMs` from now, whether the condition has passed; a timer per condition, not per request. */
  #watch(name: string, condition: Condition, afterMs: number): void {
    const timer = setTimeout(() => {
      const quietFor = performance.now() - condition.lastMet
      const quietNeeded = this.#quietMs + Math.round(condition.longestWaitMs)
      if (quietFor < quietNeeded) {
        this.#watch(name, condition, quietNeeded - quietFor)
        return
      }
      this.#conditions.delete(name)
      this.#logPassed(
        name,
        condition,
        condition.lastMet,
        `passed, as far as requests tell: none met it for ${quietNeeded} ms`,
      )
    }, afterMs)
    // Never what keeps a process alive: a condition still open at exit ends with the process.
    timer.unref()
  }
}

// One condition log per process logger, i.e. per app (an app's plugins all share its logger).
const conditionLogs = new WeakMap<FastifyBaseLogger, ConditionLog>()

function conditionLogOf(request: FastifyRequest): ConditionLog {
  const root = request.server?.log ?? request.log
  let conditions = conditionLogs.get(root)
  if (conditions === undefined) {
    conditions = new ConditionLog(root)
    conditionLogs.set(root, conditions)
  }
  return conditions
}

/**
 * Logs a request answered 503, or 507 (`apiError`, for `error`), after `waitedMs`: by its condition (with
 * the stack once, for a store failure or the failure an answer names as its cause), and names the
 * condition on the request's own access line; nothing else is written per request.
 */
export function logCondition(
  error: unknown,
  apiError: ApiError,
  request: FastifyRequest,
  waitedMs: number,
): void {
  // A release older than the schema is a deployment's state, not a fault: no stack, and a ready probe
  // (a deploy, or the schema made compatible again) ends it.
  const newerSchema = error instanceof NewerSchemaError
  // The store's own error, or a write in doubt a use case answered in its own words (readiness's cause is
  // said at warn: the probe's condition, not a fault of a request).
  const storeError = apiError.cause instanceof WriteInDoubtError ? apiError.cause : error
  const fault = storeError instanceof StoreUnavailableError && !newerSchema
  // Named as the answer names it, without the advice: "the store is unavailable", "the service is overloaded".
  const condition = apiError.message.split(';')[0] as string
  const cause = fault ? undefined : apiError.cause
  const detail = fault
    ? { err: storeError }
    : cause === undefined
      ? { code: apiError.code }
      : { code: apiError.code, err: cause }
  const level = fault || apiError.statusCode === 507 ? 'error' : 'warn'
  conditionLogOf(request).met(condition, level, detail, request.id, {
    untilReady: isReadiness(condition) || newerSchema,
    // Ids given out never come back, nor does a process shutting down: no quiet spell means it has passed.
    forGood: apiError.statusCode === 507 || condition === SHUTTING_DOWN_CONDITION,
    status: apiError.statusCode,
    waitedMs,
  })
  ;(request.log as Partial<Pick<Logger, 'setBindings'>>).setBindings?.({ condition })
}

/** A probe found the service ready: the conditions a ready probe ends (readiness's, a release's) pass. */
export function logReady(request: FastifyRequest): void {
  conditionLogOf(request).passed('/readyz answered ready')
}
