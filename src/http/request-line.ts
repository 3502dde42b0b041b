import pino, { type Logger } from 'pino'
import { maskApiKeys } from '../log/key-masking.ts'
import { Made, quoted } from './made-once.ts'

/** What the line of one answered request says. */
export interface RequestLine {
  /** Written as it is: request ids hold only letters, digits and `._:-` (requestIdOf, request-logging.ts). */
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

/** pino's destination; the service's own also takes a line known to be ASCII (log/log-output.ts). */
interface LineStream {
  write(line: string): unknown
  writeAscii?(line: string): unknown
}

/**
 * Whether the text is printable ASCII but `"` and `\`, so that its JSON form is itself in quotes (ids,
 * addresses, most URLs and user agents). A loop, not a regular expression: a test's fixed cost was most
 * of the field's (docs/benchmarks/tuning.md, "Counted instructions").
 */
function isPlain(text: string): boolean {
  for (let at = 0; at < text.length; at++) {
    const code = text.charCodeAt(at)
    if (code < 0x20 || code > 0x7e || code === 0x22 || code === 0x5c) return false
  }
  return true
}

/** JSON's form of a text that is not plain, without its quotes. */
const escaped = (text: string): string => JSON.stringify(text).slice(1, -1)

/**
 * isPlain for one field, the last text it found plain kept: a client's address and user agent repeat
 * from one request to the next, and comparing them costs less than checking them again.
 */
function repeatedIsPlain(): (text: string) => boolean {
  let lastPlain = ''
  return (text) => {
    if (text === lastPlain) return true
    if (!isPlain(text)) return false
    lastPlain = text
    return true
  }
}

// A UTF-16 unit past ASCII.
const NOT_ASCII = /[\u0080-\uffff]/

/**
 * The parts as one flat string. A template keeps its result as a tree of its parts, which every line
 * built from it would walk again when it is written: the pieces kept for many lines are made flat once.
 */
const flat = (...parts: string[]): string => parts.join('')

// A duration's hundredths as `String()` writes them, trailing zero dropped: '', '.01', … '.1', '.11', … '.99'.
const FRACTIONS = Array.from({ length: 100 }, (_, cents) =>
  cents === 0 ? '' : `.${`${cents}`.padStart(2, '0')}`.replace(/0$/, ''),
)

// Durations under 10 ms, nearly every request's, written once each: '0', '0.01', … '9.99'.
const SHORT_DURATIONS = Array.from(
  { length: 1000 },
  (_, total) => `${Math.trunc(total / 100)}${FRACTIONS[total % 100]}`,
)

/**
 * `String(Math.round(ms * 100) / 100)` from integers, without formatting a double. A duration that is not
 * a plain non-negative number (a clock stepped back) is written as 0, never as `NaN` or `-0.5`.
 */
function hundredths(ms: number): string {
  const total = ms >= 0 && ms < 1e13 ? Math.round(ms * 100) : 0
  if (total < 1000) return SHORT_DURATIONS[total] as string
  const cents = total % 100
  return `${(total - cents) / 100}${FRACTIONS[cents]}`
}

// A time's last three digits, '000' … '999': a new millisecond costs one concatenation, not a formatting.
const MILLISECONDS = Array.from({ length: 1000 }, (_, ms) => `${ms}`.padStart(3, '0'))

// The pieces of a line that only its method, its operation and status, or its key decide.
const methodPieces = () => new Made((method: string) => flat(',"method":', quoted(method), ',"url":"'))
const afterIdPieces = () => new Made((method: string) => flat('","method":', quoted(method), ',"url":"'))
// Per operation, its pieces by status (see outcomePiece).
const outcomePieces = () => new Made((_operation: string): string[] => [])
const keyPieces = () => new Made((key: string) => flat(',"key":', quoted(maskApiKeys(key))))

/** `","operation":"getPet","status":200,"durationMs":`, made once per operation and status. */
function outcomePiece(byStatus: string[], operation: string, status: number): string {
  let piece = byStatus[status]
  if (piece === undefined) {
    piece = flat('","operation":', quoted(operation), ',"status":', `${status}`, ',"durationMs":')
    byStatus[status] = piece
  }
  return piece
}

/**
 * The writer of the one line per request at `level`, or undefined when the log is below it. The line is the one
 * pino would write (same fields and order; characters past ASCII in a method, operation or key name
 * escaped), built by concatenation instead of a child logger and a serialization per request, which
 * cost more than twice as much, from pieces made once per method, per operation and status, per key,
 * per second and per millisecond; a line all ASCII, as nearly all are, is copied into the service's output
 * rather than encoded (docs/decisions.md, "The request log is buffered"). Keys are masked field by field, where a client or a proxy can put one: the URL and the user
 * agent by their callers (masked, then cut), the forwarded client address, the key's name and later
 * bindings here; the request id never holds one, nor anything JSON would escape (request-logging.ts).
 */
export function requestLineWriter(
  logger: Logger,
  level: keyof typeof LEVELS,
): ((line: RequestLine) => void) | undefined {
  if (!logger.isLevelEnabled(level)) return undefined
  const levelField = `{"level":${LEVELS[level]},"time":`
  const stream = (logger as unknown as Record<symbol, LineStream | undefined>)[pino.symbols.streamSym]
  if (stream === undefined) return undefined
  // A line all ASCII is copied into the output rather than encoded, when the output can (the service's own).
  const writeAscii = stream.writeAscii === undefined ? stream.write : stream.writeAscii
  const afterId = afterIdPieces()
  const afterBindings = methodPieces()
  const outcomes = outcomePieces()
  const keyFields = keyPieces()
  const plainAddress = repeatedIsPlain()
  const plainAgent = repeatedIsPlain()
  // The line's start up to the request id's text: `{"level":30,"time":` and the time's seconds, remade each
  // second (secondStart is its first millisecond); then its milliseconds and the base bindings
  // (`,"pid":…,"hostname":"…"` and any set later, exactly as pino writes them) up to `,"reqId":"`, remade
  // each millisecond or when the bindings change.
  let secondStart = Number.NaN
  let secondText = ''
  let timeMs = Number.NaN
  let bindings: string | undefined
  let asciiBase = true
  let afterTime = ''
  let timed = ''
  let start = ''
  return (line) => {
    const now = Date.now()
    const base = (logger as unknown as Record<symbol, string | undefined>)[pino.symbols.chindingsSym]
    if (now !== timeMs || base !== bindings) {
      if (base !== bindings) {
        afterTime = flat(base ?? '', ',"reqId":"')
        asciiBase = !NOT_ASCII.test(afterTime)
      }
      if (now !== timeMs) {
        const ms = now - secondStart
        if (ms >= 0 && ms < 1000) timed = secondText + MILLISECONDS[ms]
        else if (now >= 1000 && now < 1e15) {
          secondStart = now - (now % 1000)
          secondText = flat(levelField, `${secondStart / 1000}`)
          timed = secondText + MILLISECONDS[now - secondStart]
        } else {
          secondStart = Number.NaN
          timed = `${levelField}${now}`
        }
      }
      timeMs = now
      bindings = base
      start = timed + afterTime
    }
    const { bindings: own, operation, status, remoteAddress: address, userAgent: agent } = line
    const head =
      own === undefined
        ? start + line.reqId + afterId.of(line.method)
        : `${timed}${maskApiKeys(own)}${afterBindings.of(line.method)}`
    const outcome = outcomePiece(outcomes.of(operation), operation, status)
    const keyField = line.key === undefined ? '' : keyFields.of(line.key)
    const { url } = line
    const masked = address === undefined ? undefined : maskApiKeys(address)
    // Text that is plain needs no escaping, and is ASCII: so is the whole line when all of it is.
    const urlPlain = isPlain(url)
    const addressPlain = masked === undefined || plainAddress(masked)
    const agentPlain = agent === undefined || plainAgent(agent)
    const addressText = masked === undefined || addressPlain ? masked : escaped(masked)
    const agentText = agent === undefined || agentPlain ? agent : escaped(agent)
    // Both the address and the agent, as nearly every line has them: one concatenation, fewer parts.
    const tail =
      addressText !== undefined && agentText !== undefined
        ? `,"remoteAddress":"${addressText}","userAgent":"${agentText}","msg":"request"}\n`
        : `${addressText === undefined ? '' : `,"remoteAddress":"${addressText}"`}` +
          `${agentText === undefined ? '' : `,"userAgent":"${agentText}"`},"msg":"request"}\n`
    const text =
      head + (urlPlain ? url : escaped(url)) + outcome + hundredths(line.durationMs) + keyField + tail
    if (urlPlain && addressPlain && agentPlain && own === undefined && asciiBase)
      writeAscii.call(stream, text)
    else stream.write(text)
  }
}
