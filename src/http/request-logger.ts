import type { FastifyBaseLogger } from 'fastify'
import pino, { type Bindings, type ChildLoggerOptions, type Logger } from 'pino'

type LogMethod = (...args: unknown[]) => void
type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace'

/**
 * A request's logger, bound to its request id, that makes pino's child on first use. Fastify makes one
 * child per request and pino serialises its bindings at once, though at `warn` (or when the line is
 * refused) most requests never log at all (docs/decisions.md, "Per-request cost").
 */
class RequestLogger {
  readonly #parent: FastifyBaseLogger
  #bindings: Bindings
  readonly #options: ChildLoggerOptions
  #logger: FastifyBaseLogger | undefined
  // Bound only the request id, as Fastify does: the request line writes that itself.
  #onlyRequestId: boolean

  constructor(parent: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions) {
    this.#parent = parent
    this.#bindings = bindings
    this.#options = options
    this.#onlyRequestId = isOnlyRequestId(bindings)
  }

  #log(level: Level, args: unknown[]): void {
    // A line below the level is dropped without making the child (4xx answers log at debug).
    if (this.#logger === undefined && this.#options.level === undefined && !this.#wouldLog(level)) return
    const logger = this.#child()
    const write = logger[level] as LogMethod
    write.apply(logger, args)
  }

  #wouldLog(level: Level): boolean {
    const parent = this.#parent as Partial<Pick<Logger, 'isLevelEnabled'>>
    return parent.isLevelEnabled?.(level) ?? true
  }

  #child(): FastifyBaseLogger {
    this.#logger ??= this.#parent.child(this.#bindings, this.#options)
    return this.#logger
  }

  get level(): string {
    return this.#logger?.level ?? this.#options.level ?? this.#parent.level
  }

  set level(level: string) {
    this.#child().level = level
  }

  fatal(...args: unknown[]): void {
    this.#log('fatal', args)
  }

  error(...args: unknown[]): void {
    this.#log('error', args)
  }

  warn(...args: unknown[]): void {
    this.#log('warn', args)
  }

  info(...args: unknown[]): void {
    this.#log('info', args)
  }

  debug(...args: unknown[]): void {
    this.#log('debug', args)
  }

  trace(...args: unknown[]): void {
    this.#log('trace', args)
  }

  silent(): void {}

  /** Adds fields to every later line of this request (its access line included), as pino's own does. */
  setBindings(bindings: Bindings): void {
    this.#onlyRequestId = false
    if (this.#logger === undefined) this.#bindings = { ...this.#bindings, ...bindings }
    else (this.#logger as unknown as Logger).setBindings(bindings)
  }

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.#child().child(bindings, options)
  }

  /**
   * The bindings of its lines as pino writes them, `,"pid":…,"reqId":"…"` and any set later (the request
   * line is built from them: request-line.ts); undefined while they are the process logger's and the
   * request id alone, which the request line writes itself at less cost. Past the id, the child is made
   * and pino serializes them, whatever their values (a request bound more than its id is a failed one,
   * whose error line makes the child anyway).
   */
  serializedBindings(): string | undefined {
    if (this.#logger === undefined && this.#onlyRequestId) return undefined
    return chindingsOf(this.#child())
  }
}

/** Whether `bindings` are `{ reqId }` alone (for…in: no array made, this runs once per request). */
function isOnlyRequestId(bindings: Bindings): boolean {
  let names = 0
  for (const name in bindings) if (name !== 'reqId' || ++names > 1) return false
  return names === 1
}

const chindingsOf = (logger: unknown): string =>
  (logger as Record<symbol, string>)[pino.symbols.chindingsSym] ?? ''

/** The serialized bindings of a request's logger (see RequestLogger), if it is one of ours. */
export function serializedBindingsOf(log: FastifyBaseLogger): string | undefined {
  return log instanceof RequestLogger ? log.serializedBindings() : undefined
}

/** Fastify's `childLoggerFactory`: the per-request logger above, in place of an eager pino child. */
export function requestLoggerFactory(
  parent: FastifyBaseLogger,
  bindings: Bindings,
  options: ChildLoggerOptions,
): FastifyBaseLogger {
  return new RequestLogger(parent, bindings, options) as unknown as FastifyBaseLogger
}
