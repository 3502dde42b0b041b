import pino, { type Logger } from 'pino'
import { maskApiKeys } from '../log/key-masking.ts'

/** What the line of one answered request says. */
export interface RequestLine {
  reqId: string
  /** The request logger's bindings as pino serializes them (`,"pid":…,"reqId":"…"`, any added later), if known. */
  bindings: string | undefined
  method: string
  url: string
  operation: string
  status: number
  /** How long the answer took; the line shows it to the hundredth. */
  durationMs: number
  /** The name of the API key that authenticated the request, if one did. */
  key: string | undefined
  /** The socket's peer, or the client a trusted proxy names (TRUSTED_PROXIES). */
  remoteAddress: string | undefined
  userAgent: string | undefined
}

const LEVELS = { info: 30, debug: 20 } as const

// JSON forms of the strings that come from a small fixed set (methods, operations, key names): made once.
const QUOTED_KEPT = 1000
const quotedForms = new Map<string, string>()

/** `JSON.stringify(text)`, remembered for the first QUOTED_KEPT strings (only fixed sets are passed). */
export function quoted(text: string): string {
  const known = quotedForms.get(text)
  if (known !== undefined) return known
  const form = JSON.stringify(text)
  if (quotedForms.size < QUOTED_KEPT) quotedForms.set(text, form)
  return form
}

// Printable ASCII but `"` and `\`: such a string's JSON form is itself in quotes (ids, addresses, most URLs).
const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/

/** `JSON.stringify(text)`, without its cost for the plain strings nearly every line holds. */
function jsonString(text: string): string {
  return PLAIN.test(text) ? `"${text}"` : JSON.stringify(text)
}

/**
 * `String(Math.round(ms * 100) / 100)` from integers, without formatting a double. A duration that is not
 * a plain non-negative number (a clock stepped back) is written as 0, never as `NaN` or `-0.5`.
 */
function hundredths(ms: number): string {
  const total = ms >= 0 && ms < 1e13 ? Math.round(ms * 100) : 0
  const whole = Math.trunc(total / 100)
  const cents = total % 100
  if (cents === 0) return `${whole}`
  if (cents % 10 === 0) return `${whole}.${cents / 10}`
  return `${whole}.${cents < 10 ? '0' : ''}${cents}`
}

/**
 * `String(now)` for a time in milliseconds, from two small integers when it has more than six digits: a
 * timestamp is no small integer, and formatting it as a double costs more than the rest of the start.
 */
function timeText(now: number): string {
  if (!(now >= 1_000_000 && now < 1e15)) return `${now}`
  const low = now % 1_000_000
  return `${(now - low) / 1_000_000}${`${1_000_000 + low}`.slice(1)}`
}

/**
 * The writer of the one line per request at `level`, or undefined when the log is below it. The line is the one
 * pino would write (same fields and order), built as one template instead of a child logger and a
 * serialization per request, which cost more than twice as much (docs/decisions.md, "The request log is
 * buffered"). Keys are masked field by field, where a client or a proxy can put one: the URL and the user
 * agent by their callers (masked, then cut), the forwarded client address, the key's name and later
 * bindings here; the request id never holds one (request-logging.ts).
 */
export function requestLineWriter(
  logger: Logger,
  level: keyof typeof LEVELS,
): ((line: RequestLine) => void) | undefined {
  if (!logger.isLevelEnabled(level)) return undefined
  const levelField = `{"level":${LEVELS[level]},"time":`
  const stream = (logger as unknown as Record<symbol, { write(line: string): unknown }>)[
    pino.symbols.streamSym
  ]
  if (stream === undefined) return undefined
  // The line's start up to the request id, made again when the millisecond or the base bindings change
  // (`,"pid":…,"hostname":"…"` and any set later, exactly as pino writes them).
  let timeMs = Number.NaN
  let bindings: string | undefined
  let timed = ''
  let start = ''
  return (line) => {
    const now = Date.now()
    const base = (logger as unknown as Record<symbol, string | undefined>)[pino.symbols.chindingsSym]
    if (now !== timeMs || base !== bindings) {
      if (now !== timeMs) timed = `${levelField}${timeText(now)}`
      timeMs = now
      bindings = base
      start = `${timed}${base ?? ''},"reqId":`
    }
    const { reqId, bindings: own, method, url, operation, status, durationMs, key } = line
    const keyField = key === undefined ? '' : `,"key":${quoted(maskApiKeys(key))}`
    const addressField =
      line.remoteAddress === undefined
        ? ''
        : `,"remoteAddress":${jsonString(maskApiKeys(line.remoteAddress))}`
    const agentField = line.userAgent === undefined ? '' : `,"userAgent":${jsonString(line.userAgent)}`
    const head = own === undefined ? `${start}${jsonString(reqId)}` : `${timed}${maskApiKeys(own)}`
    stream.write(
      `${head},"method":${quoted(method)},"url":${jsonString(url)},` +
        `"operation":${quoted(operation)},"status":${status},"durationMs":${hundredths(durationMs)}` +
        `${keyField}${addressField}${agentField},"msg":"request"}\n`,
    )
  }
}
