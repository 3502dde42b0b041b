import type { Logger } from 'pino'
import type { ApiError } from '../errors.ts'
import { maskKeyStartAtEnd } from '../log/key-masking.ts'
import type { Metrics } from '../metrics/metrics.ts'
import { loggedUrl } from './access-line.ts'
import { TARGET_MAX_BYTES } from './request-head.ts'

/** An answer made below the framework, which no hook sees: the parser's refusals, CONNECT, an unmet Expect. */
export interface RawRefusal {
  error: ApiError
  reqId: string
  /** As far as the request line could be read. */
  method?: string | undefined
  url?: string | undefined
  remoteAddress: string | undefined
}

export type RecordRawRefusal = (refusal: RawRefusal) => void

// A method is any token (RFC 9110 §9.1): Node's parser refuses those it does not know, lowercase ones too.
const METHOD = "([!#$%&'*+.^_`|~0-9A-Za-z-]{1,20})"
// A whole request line at the start of what the parser held (which may be a later part of the head).
const REQUEST_LINE = new RegExp(`^${METHOD} (\\S{1,${TARGET_MAX_BYTES}}) HTTP\\/\\d\\.\\d\\r?\\n`)
// The longest line that pattern matches: a 20-letter method, the longest target read, the version and CRLF.
const REQUEST_LINE_MAX_BYTES = 20 + 1 + TARGET_MAX_BYTES + 1 + 8 + 2
// The start of a request line: a method the parser knows (it refused the others before the head could
// overflow), and a target in one of its forms, so that a piece of a long header is not taken for one. The
// target is read far past where a log line cuts a URL: a key across that point is masked whole first.
const REQUEST_LINE_START = new RegExp(
  `^([A-Z]{3,20}) ((?:/|\\*|[A-Za-z][A-Za-z\\d+.-]*://)\\S{0,${TARGET_MAX_BYTES}})`,
)

/**
 * Writes the line of a request answered below the framework and counts it by status, so that slow
 * clients (408), oversized heads (431) and garbage (400) show in the log and the metrics as any request.
 */
export function rawRefusalRecorder(logger: Pick<Logger, 'info'>, metrics: Metrics): RecordRawRefusal {
  return ({ error, reqId, method, url, remoteAddress }) => {
    metrics.refusedByHttp.inc({ status: String(error.statusCode) })
    logger.info(
      {
        reqId,
        method,
        // Masked, then cut, as the request line's URL is.
        url: url === undefined ? undefined : loggedUrl(url),
        status: error.statusCode,
        code: error.code,
        remoteAddress,
      },
      'request refused before it reached an operation',
    )
  }
}

/** The method and target at the start of the bytes the parser held, where they can be read. */
export function requestLineOf(packet: unknown): { method?: string; url?: string } {
  // Node's parser gives a Buffer (Fastify's types say otherwise).
  if (!Buffer.isBuffer(packet)) return {}
  const line = REQUEST_LINE.exec(packet.subarray(0, REQUEST_LINE_MAX_BYTES).toString('latin1'))
  return line === null ? {} : { method: line[1], url: line[2] }
}

/**
 * The method and the start of the target of a request line too long to be read (no line end within
 * REQUEST_LINE_MAX_BYTES of the start of the bytes the parser held), or undefined where it cannot be told.
 */
export function overlongRequestLine(packet: unknown): { method: string; url: string } | undefined {
  if (!Buffer.isBuffer(packet) || packet.length < REQUEST_LINE_MAX_BYTES) return undefined
  const start = packet.subarray(0, REQUEST_LINE_MAX_BYTES)
  if (start.includes(0x0a)) return undefined
  const line = REQUEST_LINE_START.exec(start.toString('latin1'))
  // What was read ends where the bytes held end, perhaps within a key (docs/decisions.md, "masked, then
  // cut").
  return line === null ? undefined : { method: line[1] as string, url: maskKeyStartAtEnd(line[2] as string) }
}
