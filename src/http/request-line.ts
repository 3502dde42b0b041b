import pino, { type Logger } from 'pino'
import { maskApiKeys } from '../auth/api-key.ts'

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
}

const INFO = 30

/**
 * The writer of the one line per request, or undefined when the log is below info. The line is the one
 * pino would write (same fields, order and masking of keys), built as one template instead of a child
 * logger and a serialization per request, which cost more than twice as much (docs/decisions.md, "The
 * request log is buffered"). Strings a client can influence go through JSON.stringify.
 */
export function requestLineWriter(logger: Logger): ((line: RequestLine) => void) | undefined {
  if (!logger.isLevelEnabled('info')) return undefined
  const stream = (logger as unknown as Record<symbol, { write(line: string): unknown }>)[
    pino.symbols.streamSym
  ]
  // `,"pid":…,"hostname":"…"` and any other base bindings, exactly as pino writes them.
  const bindings = (logger as unknown as Record<symbol, string>)[pino.symbols.chindingsSym] ?? ''
  if (stream === undefined) return undefined
  return ({ reqId, bindings: own, method, url, operation, status, durationMs, key }) => {
    const keyField = key === undefined ? '' : `,"key":${JSON.stringify(key)}`
    stream.write(
      maskApiKeys(
        `{"level":${INFO},"time":${Date.now()}${own ?? `${bindings},"reqId":${JSON.stringify(reqId)}`},"method":${JSON.stringify(method)},` +
          `"url":${JSON.stringify(url)},"operation":${JSON.stringify(operation)},"status":${status},` +
          `"durationMs":${durationMs}${keyField},"msg":"request"}\n`,
      ),
    )
  }
}
