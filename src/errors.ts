/**
 * Every error the API can answer with: HTTP status and the stable `code` clients branch on, part of the
 * public contract (never rename one; add another). A status's first code is used for errors that carry
 * only a status (from the framework or a plugin).
 */
export const ERROR_CODES = {
  bad_request: {
    status: 400,
    summary: 'The request could not be read (malformed URL, bad header, bad framing).',
  },
  malformed_json: {
    status: 400,
    summary: 'The request body is not valid JSON (or not UTF-8, or nested more than 64 levels).',
  },
  invalid_body: {
    status: 400,
    summary: 'The body is missing or empty, or breaks the NewPet schema; the message names the field.',
  },
  invalid_query: { status: 400, summary: 'A query parameter is unknown, repeated or out of range.' },
  invalid_path_parameter: { status: 400, summary: 'A path parameter is not valid (petId must be an int64).' },
  invalid_idempotency_key: { status: 400, summary: 'The Idempotency-Key header is malformed or repeated.' },
  unauthorized: { status: 401, summary: 'The bearer API key is missing, malformed, unknown or revoked.' },
  route_not_found: {
    status: 404,
    summary:
      "No operation exists at this path; the message names the method and the path's first 200 characters, never its query.",
  },
  pet_not_found: { status: 404, summary: 'No pet has the requested id.' },
  method_not_allowed: { status: 405, summary: 'The path exists but not with this method; see Allow.' },
  request_timeout: { status: 408, summary: 'The request was not received in time.' },
  idempotency_key_in_flight: {
    status: 409,
    summary: 'A request with the same Idempotency-Key is still being processed; retry later.',
  },
  gone: { status: 410, summary: 'The operation was removed after its sunset date.' },
  body_too_large: { status: 413, summary: 'The request body is over the size limit.' },
  uri_too_long: { status: 414, summary: 'The request target (path and query) is over 8 KiB.' },
  unsupported_media_type: {
    status: 415,
    summary: 'The body is not UTF-8 application/json, or is content-encoded.',
  },
  expectation_failed: {
    status: 417,
    summary: 'The Expect header asks for something other than 100-continue.',
  },
  idempotency_key_reused: {
    status: 422,
    summary: 'The Idempotency-Key was already used with a different request body.',
  },
  rate_limited: { status: 429, summary: 'Too many requests for this API key; see Retry-After.' },
  headers_too_large: { status: 431, summary: 'The request line or headers are too large.' },
  internal_error: { status: 500, summary: 'An unexpected failure; the detail is in the server log.' },
  service_unavailable: {
    status: 503,
    summary: 'The service cannot answer now (store down, overload, shutdown).',
  },
  pet_ids_exhausted: {
    status: 507,
    summary: 'Every pet id, up to the largest int64, has been given out: no pet can be added.',
  },
} as const satisfies Record<string, { status: number; summary: string }>

export type ErrorCode = keyof typeof ERROR_CODES

/** The body every error response carries. */
interface ErrorBodyValue {
  code: ErrorCode
  message: string
  status: number
}

/** The longest `message` an error body carries: one echoing a huge field name or header value is cut. */
export const MESSAGE_MAX_LENGTH = 500

function bounded(message: string): string {
  if (message.length <= MESSAGE_MAX_LENGTH) return message
  // Never half of a surrogate pair at the cut.
  return `${message.slice(0, MESSAGE_MAX_LENGTH - 1).replace(/[\uD800-\uDBFF]$/, '')}…`
}

/** An error whose code, status and message are safe to send to the client as they are. */
export class ApiError extends Error {
  readonly code: ErrorCode
  readonly statusCode: number
  /** Response headers that belong to this error (e.g. `Allow`, `WWW-Authenticate`, `Retry-After`). */
  readonly headers: Readonly<Record<string, string>>

  /** `options.cause`: the failure behind the answer, for the log only (never in the body). */
  constructor(
    code: ErrorCode,
    message: string,
    headers: Record<string, string> = {},
    options?: ErrorOptions,
  ) {
    // An ApiError is an answer, not a fault: its stack is never shown or logged, and capturing one is the
    // most expensive part of refusing a request (401s come by the thousand under attack).
    const limit = Error.stackTraceLimit
    Error.stackTraceLimit = 0
    super(bounded(message), options)
    Error.stackTraceLimit = limit
    this.name = 'ApiError'
    this.code = code
    this.statusCode = ERROR_CODES[code].status
    this.headers = headers
  }

  // Kept once made: the refusals built at start (bearer-auth.ts) are sent by the thousand.
  #json: string | undefined

  /** The body as sent, JSON. */
  toJson(): string {
    if (this.#json === undefined) {
      const body: ErrorBodyValue = { code: this.code, message: this.message, status: this.statusCode }
      this.#json = JSON.stringify(body)
    }
    return this.#json
  }
}

/**
 * A 503, with `Retry-After`: a second for what passes by itself (a store's hiccup, a burst, a stop under
 * way: the retry goes to this instance or another), five for what only a deploy mends (a schema this
 * release cannot run on). `headers`: what else the answer carries (`Connection: close`).
 */
export function serviceUnavailable(
  message: string,
  {
    retryAfterS = 1,
    headers = {},
    cause,
  }: { retryAfterS?: 1 | 5; headers?: Record<string, string>; cause?: unknown } = {},
): ApiError {
  return new ApiError(
    'service_unavailable',
    message,
    { ...headers, 'retry-after': String(retryAfterS) },
    cause === undefined ? undefined : { cause },
  )
}

export function isApiError(error: unknown): error is ApiError {
  return error instanceof ApiError
}

/** The code for an error that carries only an HTTP status; undefined for statuses we never use. */
export function codeForStatus(status: number): ErrorCode | undefined {
  return (Object.keys(ERROR_CODES) as ErrorCode[]).find((code) => ERROR_CODES[code].status === status)
}

/** An error's message and its cause's, in one line ("the database is unreachable: connect ECONNREFUSED …"). */
export function messageWithCause(error: Error): string {
  return error.cause instanceof Error ? `${error.message}: ${error.cause.message}` : error.message
}

/** A setting, or a command's option, that cannot be used: the process stops, naming it. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'ConfigError'
  }
}

/** Thrown by a store when the database cannot be reached or refuses work for now; answered with 503. */
export class StoreUnavailableError extends Error {
  /** What an operator does about it when a command or a start stops on it; never sent to a client. */
  readonly remedy: string | undefined

  constructor(message: string, options?: ErrorOptions & { remedy?: string }) {
    super(message, options)
    this.name = 'StoreUnavailableError'
    this.remedy = options?.remedy
  }
}

/**
 * A write whose commit the database never confirmed: its connection was lost, or given up on, once the
 * commit was sent, so it may have been made (a frozen server commits it when it resumes); or one committed
 * into a SQLite file moved or deleted meanwhile, kept only if that file is put back. Answered 503.
 */
export class WriteInDoubtError extends StoreUnavailableError {
  /** Why a create is in doubt, as its answer says it. */
  readonly why: string

  constructor(options?: ErrorOptions & { fileMoved?: true }) {
    const why = options?.fileMoved
      ? 'the create was committed into a database file that was moved or deleted meanwhile, and is kept only if that file is put back'
      : 'the database did not confirm the create before its connection was lost'
    super(`${why.replace('the create', 'a write')}: it may have been made`, options)
    this.name = 'WriteInDoubtError'
    this.why = why
  }
}

/**
 * A table, column or schema the service's statements name is gone from its database: dropped or renamed
 * under it (a restore with --clean under way, a database made again, empty). Answered 503 meanwhile.
 */
export class SchemaMissingError extends StoreUnavailableError {
  constructor(options?: ErrorOptions) {
    super(
      'the database lacks the Pet Store schema, or part of it (a table or column dropped or renamed, or the database made again)',
      {
        ...options,
        remedy:
          'restore the database (or migrate an empty one), then run it again; restart the running instances',
      },
    )
    this.name = 'SchemaMissingError'
  }
}

/**
 * The database refuses the service's role a table its statements use (SQLSTATE 42501): the table given
 * to another role (a restore run as one, ALTER TABLE … OWNER TO) or a grant revoked. Answered 503 meanwhile.
 */
export class TableAccessRefusedError extends StoreUnavailableError {
  constructor(options?: ErrorOptions) {
    super("the database refuses this service's role a table it uses (insufficient privilege)", {
      ...options,
      remedy:
        'give the role its tables back (ALTER TABLE … OWNER TO it, or GRANT SELECT, INSERT, UPDATE, DELETE ' +
        'ON them TO it), then run it again',
    })
    this.name = 'TableAccessRefusedError'
  }
}

/** The database's schema needs a newer release than this one: writes are refused until one replaces it. */
export class NewerSchemaError extends StoreUnavailableError {
  constructor(message: string) {
    super(message)
    this.name = 'NewerSchemaError'
  }
}
