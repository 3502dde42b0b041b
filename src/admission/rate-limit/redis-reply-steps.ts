import type { Redis } from 'ioredis'
import type { Logger } from 'pino'

// ioredis's error for a reply no command waits for (DataHandler's shiftCommand): Redis, or something
// between, sent more replies than commands, so the replies after it may answer the wrong commands.
export const OUT_OF_STEP = /^Command queue state error\b/

// ioredis's error for a command (a ready check's INFO included) unanswered past its `commandTimeout`.
export const COMMAND_TIMED_OUT = 'Command timed out'

// How long after a count asked of a connection (a probe) no reply out of step may come, for it to be
// in step: a Redis may answer the ready check in step and only the count out of step.
const IN_STEP_MS = 1000
// While replies are out of step, one count this often asks Redis, as the proof of being in step again.
const PROBE_EVERY_MS = 1000

/** How a client's replies keep step with its commands, as the counter sees it. */
export interface ReplySteps {
  /** Since when its replies are out of step, until a probe's count has met none for IN_STEP_MS. */
  readonly outOfStepSince: number | undefined
  /** While out of step: a probe's token if this count may ask Redis (one a second), else undefined. */
  probe(): number | undefined
  /** The probe `token` was answered with a count: in step once IN_STEP_MS pass with no reply out of step. */
  counted(token: number): void
}

/** ReplySteps, and what keepInStep and the connection's outages keep of them. */
export class Steps implements ReplySteps {
  outOfStepSince: number | undefined
  /** A connection that met replies out of step is closing: what it still reports is no outage. */
  dropping = false
  droppedInARow = 0
  ready = false
  // Counts each reply out of step and each connection closed: a probe's count before either proves nothing.
  #generation = 0
  #inStep: NodeJS.Timeout | undefined
  #probeAt = 0
  readonly #log: Pick<Logger, 'info'>

  constructor(log: Pick<Logger, 'info'>) {
    this.#log = log
  }

  probe(): number | undefined {
    // A probe sent before the connection is ready fails at once, asking nothing: the next ready one asks.
    const now = performance.now()
    if (!this.ready || now < this.#probeAt) return undefined
    this.#probeAt = now + PROBE_EVERY_MS
    return this.#generation
  }

  counted(token: number): void {
    const since = this.outOfStepSince
    if (token !== this.#generation || since === undefined || this.#inStep !== undefined) return
    this.#inStep = setTimeout(() => {
      this.#inStep = undefined
      this.outOfStepSince = undefined
      this.droppedInARow = 0
      this.#log.info(
        { outOfStepMs: Math.round(performance.now() - since) },
        'Redis replies in step again: rate limits are counted',
      )
    }, IN_STEP_MS).unref()
  }

  /** A reply out of step, or a connection closed: what a probe proved before either is not kept. */
  unproven(): void {
    this.#generation++
    clearTimeout(this.#inStep)
    this.#inStep = undefined
  }
}

/**
 * Drops a connection that meets a reply no command asked for and makes another, further apart up to 2 s,
 * said in one warn line and one info line once back in step. It listens from the client's creation, as
 * ioredis emits that error uncaught (docs/decisions.md, "Redis that is away, hung or out of step").
 */
export function keepInStep(redis: Redis, log: Pick<Logger, 'warn' | 'info'>, steps: Steps): void {
  redis.on('error', (error: Error) => {
    if (!OUT_OF_STEP.test(error.message)) return
    steps.unproven()
    // Each reply too many is an error of its own: the connection is dropped once.
    if (!steps.dropping && (redis.status === 'connect' || redis.status === 'ready')) {
      steps.dropping = true
      steps.droppedInARow++
      redis.disconnect(true)
    }
    if (steps.outOfStepSince !== undefined) return
    steps.outOfStepSince = performance.now()
    log.warn(
      { err: error },
      'Redis sends replies no command asked for: rate limits are not counted until it stops',
    )
  })
  redis.on('close', () => {
    steps.dropping = false
    steps.ready = false
    steps.unproven()
  })
  redis.on('ready', () => {
    steps.ready = true
  })
}
