import pino, { type Logger } from 'pino'
import { maskApiKeys } from '../log/key-masking.ts'
import { escapedInLine } from '../log/line-chunks.ts'
import type { BufferedLogOutput } from '../log/log-output.ts'
import { escaped, FixedPieces, flat, hundredths, isPlain, LineStart } from './access-line-parts.ts'
import { TARGET_USERINFO } from './request-head.ts'

/** What the line of one answered request says. */
export interface AccessLine {
  /** Written as it is: request ids hold only letters, digits and `._:-` (requestIdOf, request-id.ts). */
  reqId: string
  /** The request logger's bindings as pino serializes them (`,"pid":…,"reqId":"…"`, any added later), if known. */
  bindings: string | undefined
  method: string
  /** As the client sent it: the line shows it with keys masked, cut at 2,048 bytes of the line. */
  url: string
  operation: string
  status: number
  /** How long the answer took; the line shows it to the hundredth. */
  durationMs: number
  /** The Error body's code, when the answer is one (a 401 for a bad key apart from one for no key…). */
  code: string | undefined
  /** The name of the API key that authenticated the request, if one did. */
  key: string | undefined
  /** The socket's peer, or the client a trusted proxy names (TRUSTED_PROXIES). */
  remoteAddress: string | undefined
  /** As the client sent it: the line shows it with keys masked, cut at 256 bytes of the line. */
  userAgent: string | undefined
}

/** A line waiting to be made, with what was true when it was taken. */
interface TakenLine {
  line: AccessLine
  /** When it was taken: the line's `time`. */
  time: number
  /** The process logger's bindings then. */
  base: string | undefined
}

const LEVELS = { info: 30, debug: 20 } as const

/** pino's destination; the service's own also takes a line known to be ASCII, and a line to be made later. */
type LineStream = Pick<BufferedLogOutput, 'write'> &
  Partial<Pick<BufferedLogOutput, 'writeAscii' | 'writeLater'>>

// Enough for any real browser or library (about 150 characters) and any URL of this API; a 16 KiB header
// does not make a 16 KiB line, and a line stays under PIPE_BUF so workers' lines never interleave. Bytes
// of the line, escapes counted: 2,048 quotes are 4,096 bytes there.
const USER_AGENT_LOGGED = 256
const URL_LOGGED = 2048

/**
 * `text` with keys masked first, then cut where its JSON form in the line (escapes, UTF-8) would pass
 * `max` bytes (cut first, a key's tail would survive). Plain text is as many bytes as characters.
 */
function logged(text: string, max: number): string {
  const masked = maskApiKeys(text)
  // No character takes more than 6 bytes in the line (`\u0001`; a surrogate's escape): nothing to count.
  if (masked.length * 6 <= max) return masked
  const end = lengthWithin(masked, max)
  return end < masked.length ? `${masked.slice(0, end)}…` : masked
}

/**
 * How many of `text`'s first UTF-16 units fit in `max` bytes of its form in the line: JSON's escapes,
 * and `\u` ones for DEL, C1 controls and line separators (escapedInLine, log/line-chunks.ts) and surrogates.
 */
function lengthWithin(text: string, max: number): number {
  let bytes = 0
  for (let at = 0; at < text.length; at++) {
    bytes += bytesInLine(text.charCodeAt(at))
    if (bytes > max) return at
  }
  return text.length
}

function bytesInLine(code: number): number {
  if (code === 0x22 || code === 0x5c) return 2
  if (code < 0x20 || escapedInLine(code)) return 6
  if (code >= 0xd800 && code <= 0xdfff) return 6
  return code < 0x80 ? 1 : code < 0x800 ? 2 : 3
}

/** A request's target as logged: `logged`, and an absolute form's user and password (refused) masked. */
export function loggedUrl(url: string): string {
  const plain = url.charCodeAt(0) === 0x2f ? url : url.replace(TARGET_USERINFO, '$1[redacted]@')
  return logged(plain, URL_LOGGED)
}

/** The line's end: `,"remoteAddress":…,"userAgent":…,"msg":"request"}` and a newline, either field absent. */
interface LineEnd {
  readonly text: string
  /** Whether it is all ASCII (both fields plain, or absent). */
  readonly ascii: boolean
}

/** The end of a line from the client's address and user agent as given (masked, the agent cut, escaped). */
function lineEnd(remoteAddress: string | undefined, userAgent: string | undefined): LineEnd {
  const address = remoteAddress === undefined ? undefined : maskApiKeys(remoteAddress)
  const agent = userAgent === undefined ? undefined : logged(userAgent, USER_AGENT_LOGGED)
  const addressPlain = address === undefined || isPlain(address)
  const agentPlain = agent === undefined || isPlain(agent)
  const addressField =
    address === undefined ? '' : `,"remoteAddress":"${addressPlain ? address : escaped(address)}"`
  const agentField = agent === undefined ? '' : `,"userAgent":"${agentPlain ? agent : escaped(agent)}"`
  return { text: flat(addressField, agentField, ',"msg":"request"}\n'), ascii: addressPlain && agentPlain }
}

/**
 * `lineEnd`, the last one kept: consecutive lines mostly come from one client, whose address and user
 * agent are then compared, not masked, cut, checked and made into an end again. Lines of interleaved
 * clients miss, and cost about what they did before.
 */
function rememberingLastEnd(): typeof lineEnd {
  let lastAddress: string | undefined
  let lastAgent: string | undefined
  let last: LineEnd | undefined
  return (remoteAddress, userAgent) => {
    if (last === undefined || remoteAddress !== lastAddress || userAgent !== lastAgent) {
      last = lineEnd(remoteAddress, userAgent)
      lastAddress = remoteAddress
      lastAgent = userAgent
    }
    return last
  }
}

/**
 * The writer of the one line per request at `level`, or undefined below it: pino's line, made later from
 * pieces made once, keys masked field by field (docs/decisions.md, "The request log is buffered"). The
 * line given is kept until it is made: give a new one each time, and leave it as it is.
 */
export function accessLineWriter(
  logger: Logger,
  level: keyof typeof LEVELS,
): ((line: AccessLine) => void) | undefined {
  if (!logger.isLevelEnabled(level)) return undefined
  const stream = (logger as unknown as Record<symbol, LineStream | undefined>)[pino.symbols.streamSym]
  if (stream === undefined) return undefined
  const writeAscii = stream.writeAscii === undefined ? stream.write : stream.writeAscii
  // Another destination than the service's output (pretty lines for a terminal) takes the line as pino
  // gives it every other: through the logger's streamWrite hook, which makes controls visible there.
  const hooks = (logger as unknown as Record<symbol, { streamWrite?: (line: string) => string }>)[
    pino.symbols.hooksSym
  ]
  const hook = stream.writeAscii === undefined ? hooks?.streamWrite : undefined
  const start = new LineStart(LEVELS[level])
  const pieces = new FixedPieces()
  const endOf = rememberingLastEnd()
  const make = ({ line, time, base }: TakenLine): void => {
    start.update(time, base)
    const { bindings: own } = line
    const url = loggedUrl(line.url)
    const head =
      own === undefined
        ? start.beforeId + line.reqId + pieces.afterId.of(line.method)
        : start.timed + maskApiKeys(own) + pieces.method.of(line.method)
    const keyField = line.key === undefined ? '' : pieces.key.of(line.key)
    const end = endOf(line.remoteAddress, line.userAgent)
    // Plain text needs no escaping and is ASCII: so is the whole line when all of it is.
    const urlPlain = isPlain(url)
    const text =
      head +
      (urlPlain ? url : escaped(url)) +
      pieces.outcome(line.operation, line.status) +
      hundredths(line.durationMs) +
      (line.code === undefined ? '' : pieces.code.of(line.code)) +
      keyField +
      end.text
    if (hook !== undefined) stream.write(hook(text))
    else if (urlPlain && end.ascii && own === undefined && start.ascii) writeAscii.call(stream, text)
    else stream.write(text)
  }
  return (line) => {
    const taken: TakenLine = {
      line,
      time: Date.now(),
      base: (logger as unknown as Record<symbol, string | undefined>)[pino.symbols.chindingsSym],
    }
    if (stream.writeLater === undefined) make(taken)
    else stream.writeLater(make, taken)
  }
}
