import { parseHttpDate } from './http-date.ts'
import type { components } from './openapi-types.ts'

/** The body of every error response the service sends. */
export type ErrorBody = components['schemas']['Error']

/**
 * A stable error code from the document, or one added to the service after this client was generated
 * (codes are only ever added), or `unexpected_response` when the answer was not an Error body at all.
 */
export type ErrorCode = KnownErrorCode | (string & Record<never, never>)

/**
 * The codes this client knows: the document's and `unexpected_response`. For a `switch` the compiler checks
 * (`error.code as KnownErrorCode`), with a default branch for a code added to the service later.
 */
export type KnownErrorCode = ErrorBody['code'] | 'unexpected_response'

/** A call that did not succeed: the service's Error body, and the response it came in. */
export class PetStoreError extends Error {
  override readonly name = 'PetStoreError'
  /** Machine-readable and stable, e.g. `unauthorized`, `pet_not_found`, `invalid_body`. */
  readonly code: ErrorCode
  /** The answer's HTTP status (the body repeats it). */
  readonly status: number
  /** The service's `X-Request-Id` for this call, which its log lines carry: quote it when asking why. */
  readonly requestId: string | undefined
  /**
   * How long the answer asks to wait before trying again (`Retry-After`, on a 429, a 503, or a 409 for an
   * Idempotency-Key still in flight), in milliseconds; undefined when it does not say.
   */
  readonly retryAfterMs: number | undefined
  readonly response: Response

  constructor(body: { code: ErrorCode; message: string; status: number }, response: Response) {
    // The answer's words may echo the request's headers: a key never reaches a log through this message.
    super(withoutKeys(body.message))
    this.code = body.code
    // The status the answer came with, whatever its body claims.
    this.status = response.status || body.status
    this.requestId = response.headers.get('x-request-id') ?? undefined
    this.retryAfterMs = retryAfterMs(response.headers.get('retry-after'))
    this.response = response
  }

  /** Builds the error from whatever a failed response carried, so a proxy's HTML page still gives one. */
  static from(body: unknown, response: Response): PetStoreError {
    if (isErrorBody(body)) return new PetStoreError(body, response)
    const text = typeof body === 'string' ? body : JSON.stringify(body ?? '')
    const what = response.ok ? "with a body that is not the API's answer" : 'without an Error body'
    const message = `HTTP ${response.status} ${what}: ${text.slice(0, 200)}`
    return new PetStoreError({ code: 'unexpected_response', message, status: response.status }, response)
  }

  /** For structured logs: an Error's message is not an own property, so JSON.stringify would drop it. */
  toJSON(): {
    name: string
    code: ErrorCode
    message: string
    status: number
    requestId?: string
    retryAfterMs?: number
  } {
    const { name, code, message, status, requestId, retryAfterMs } = this
    return {
      name,
      code,
      message,
      status,
      ...(requestId === undefined ? {} : { requestId }),
      ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
    }
  }
}

/**
 * `Retry-After` in milliseconds: its seconds (RFC 9110: digits only), or the time until its HTTP-date, 0 for
 * a date past; undefined for no header or one that is neither.
 */
function retryAfterMs(value: string | null): number | undefined {
  if (value === null) return undefined
  const text = value.trim()
  if (/^\d+$/.test(text)) return Number(text) * 1000
  const at = parseHttpDate(text)
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now())
}

function isErrorBody(body: unknown): body is ErrorBody {
  if (typeof body !== 'object' || body === null) return false
  const { code, message, status } = body as Record<string, unknown>
  return typeof code === 'string' && typeof message === 'string' && typeof status === 'number'
}

/** `text` with anything shaped like a key cut to its prefix. */
function withoutKeys(text: string): string {
  return text.replace(/psk_[A-Za-z0-9_-]*/g, 'psk_…')
}
