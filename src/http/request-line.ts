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

/**
 * The writer of the one line per request at `level`, or undefined when the log is below it. The line is the one
 * pino would write (same fields, order and masking of keys), built as one template instead of a child
 * logger and a serialization per request, which cost more than twice as much (docs/decisions.md, "The
 * request log is buffered"). Strings a client can influence go through JSON.stringify.
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
  // `,"pid":…,"hostname":"…"` and any other base bindings, exactly as pino writes them.
  const bindings = (logger as unknown as Record<symbol, string>)[pino.symbols.chindingsSym] ?? ''
  if (stream === undefined) return undefined
  return (line) => {
    const { reqId, bindings: own, method, url, operation, status, durationMs, key } = line
    const keyField = key === undefined ? '' : `,"key":${quoted(key)}`
    const addressField =
      line.remoteAddress === undefined ? '' : `,"remoteAddress":${JSON.stringify(line.remoteAddress)}`
    const agentField = line.userAgent === undefined ? '' : `,"userAgent":${JSON.stringify(line.userAgent)}`
    stream.write(
      maskApiKeys(
        `${levelField}${Date.now()}${own ?? `${bindings},"reqId":${JSON.stringify(reqId)}`},"method":${quoted(method)},` +
          `"url":${JSON.stringify(url)},"operation":${quoted(operation)},"status":${status},` +
          `"durationMs":${durationMs}${keyField}${addressField}${agentField},"msg":"request"}\n`,
      ),
    )
  }
}
