import type { FastifyBaseLogger } from 'fastify'
import pino, { type Bindings, type ChildLoggerOptions, type Logger } from 'pino'

type LogMethod = (...args: unknown[]) => void
type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace'

/**
 * The logger Fastify is given: a child bound to a request id alone is made in pino only on first use, as most
 * requests never log; every other child at once. Fastify's logger, not a `childLoggerFactory`, whose loggers
 * Fastify checks per request (docs/decisions.md, "Per-request logger made on first use").
 */
class LazyLogger implements FastifyBaseLogger {
  readonly #parent: LazyLogger | undefined
  #bindings: Bindings
  readonly #options: ChildLoggerOptions
  #logger: Logger | undefined
  // Its lines carry the root's bindings and nothing else, as the request line's start does.
  #plain: boolean
  // Bound only the request id, as Fastify binds each request: the request line writes that itself.
  #onlyRequestId: boolean

  constructor(
    parent: LazyLogger | undefined,
    bindings: Bindings,
    options: ChildLoggerOptions,
    made?: Logger,
  ) {
    this.#parent = parent
    this.#bindings = bindings
    this.#options = options
    this.#logger = made
    const parentPlain = parent === undefined || parent.#plain
    this.#onlyRequestId = parent !== undefined && parentPlain && isOnlyRequestId(bindings)
    this.#plain = parentPlain && isEmpty(bindings)
    if (parent !== undefined && !this.#onlyRequestId) this.pino()
  }

  /** pino's logger behind this one, made now if it was not yet. */
  pino(): Logger {
    this.#logger ??= (this.#parent as LazyLogger).pino().child(this.#bindings, this.#options)
    return this.#logger
  }

  #log(level: Level, args: unknown[]): void {
    // A line below the level is dropped without making the child (4xx answers log at debug).
    if (this.#logger === undefined && !this.isLevelEnabled(level)) return
    const logger = this.pino()
    const write = logger[level] as LogMethod
    write.apply(logger, args)
  }

  isLevelEnabled(level: string): boolean {
    if (this.#logger !== undefined) return this.#logger.isLevelEnabled(level)
    // A child of its own level (a route's logLevel) is made to answer: pino knows the custom levels.
    if (this.#options.level !== undefined) return this.pino().isLevelEnabled(level)
    return (this.#parent as LazyLogger).isLevelEnabled(level)
  }

  get level(): string {
    return this.#logger?.level ?? this.#options.level ?? (this.#parent as LazyLogger).level
  }

  set level(level: string) {
    this.pino().level = level
  }

  /** The levels by name and value; Fastify checks a route's `logLevel` against them. */
  get levels(): Logger['levels'] {
    return this.#logger?.levels ?? (this.#parent as LazyLogger).levels
  }

  /** The serializers pino applies, merged by Fastify into its own when it makes its logger of this one. */
  get [pino.symbols.serializersSym](): unknown {
    return (this.pino() as unknown as Record<symbol, unknown>)[pino.symbols.serializersSym]
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

  /** Adds fields to every later line of this logger (a request's access line included), as pino's own does. */
  setBindings(bindings: Bindings): void {
    this.#onlyRequestId = false
    this.#plain = false
    if (this.#logger === undefined) this.#bindings = { ...this.#bindings, ...bindings }
    else this.#logger.setBindings(bindings)
  }

  bindings(): Bindings {
    return this.pino().bindings()
  }

  child(bindings: Bindings, options: ChildLoggerOptions = {}): LazyLogger {
    return new LazyLogger(this, bindings, options)
  }

  flush(callback?: (error?: Error) => void): void {
    this.pino().flush(callback)
  }

  /**
   * Its lines' bindings as pino writes them (`,"pid":…,"reqId":"…"`, for access-line.ts), or undefined while
   * they are the process logger's and the request id alone, which the request line writes itself for less.
   */
  serializedBindings(): string | undefined {
    if (this.#logger === undefined && this.#onlyRequestId && (this.#parent as LazyLogger).#plain)
      return undefined
    return chindingsOf(this.pino())
  }
}

/** Whether `bindings` have no field (for…in: no array made). */
function isEmpty(bindings: Bindings): boolean {
  for (const _ in bindings) return false
  return true
}

/** Whether `bindings` are `{ reqId }` alone (for…in: no array made, this runs once per request). */
function isOnlyRequestId(bindings: Bindings): boolean {
  let names = 0
  for (const name in bindings) if (name !== 'reqId' || ++names > 1) return false
  return names === 1
}

const chindingsOf = (logger: unknown): string =>
  (logger as Record<symbol, string>)[pino.symbols.chindingsSym] ?? ''

/** The logger to give Fastify (`loggerInstance`): `logger` itself, its children made lazily (see LazyLogger). */
export function lazyLogger(logger: Logger): FastifyBaseLogger {
  return new LazyLogger(undefined, {}, {}, logger)
}

/** pino's logger behind `log` (made now if need be): the request line writes to its stream itself. */
export function pinoLoggerOf(log: FastifyBaseLogger): Logger {
  return log instanceof LazyLogger ? log.pino() : (log as unknown as Logger)
}

/** The serialized bindings of a request's logger (see LazyLogger), if it is one of ours. */
export function serializedBindingsOf(log: FastifyBaseLogger): string | undefined {
  return log instanceof LazyLogger ? log.serializedBindings() : undefined
}
