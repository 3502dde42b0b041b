import { parseHttpDate } from './http-date.ts'
import { linkOf } from './link-header.ts'

/**
 * What an answer said of its operation's deprecation: `Deprecation` (RFC 9745), `Sunset` (RFC 8594) and
 * the `successor-version` link. A date or link the answer did not carry, or carried unreadable, is
 * undefined.
 */
export interface DeprecationNotice {
  /** The client's method that was called, e.g. `getPet`. */
  operation: string
  /** When the operation was deprecated. */
  deprecatedAt: Date | undefined
  /** When it is to be removed: calls after it may get 410 `gone`. */
  sunset: Date | undefined
  /** What replaces it. */
  successor: URL | undefined
  /** The answer's status: errors announce the deprecation too. */
  status: number
  /** The service's `X-Request-Id` for the call. */
  requestId: string | undefined
}

/**
 * Called with the notice of every answer that announces a deprecation, before the call returns or throws;
 * a promise it returns is awaited.
 */
export type DeprecationListener = (notice: DeprecationNotice) => unknown

/** The notice an answer carries, or undefined when it has no `Deprecation` header. */
export function deprecationNoticeOf(operation: string, response: Response): DeprecationNotice | undefined {
  const deprecation = response.headers.get('deprecation')
  if (deprecation === null) return undefined
  // RFC 9745: a structured date, `@` and whole seconds since the epoch.
  const seconds = /^@(-?\d{1,15})$/.exec(deprecation.trim())?.[1]
  return {
    operation,
    deprecatedAt: seconds === undefined ? undefined : dateOf(Number(seconds) * 1000),
    sunset: dateOf(parseHttpDate(response.headers.get('sunset') ?? '')),
    successor: successorOf(response),
    status: response.status,
    requestId: response.headers.get('x-request-id') ?? undefined,
  }
}

/** A date, or undefined for one past what `Date` holds (or not a date at all). */
function dateOf(epochMs: number): Date | undefined {
  const date = new Date(epochMs)
  return Number.isNaN(date.getTime()) ? undefined : date
}

/** The `successor-version` link's target; undefined when absent or not a URL. */
function successorOf(response: Response): URL | undefined {
  try {
    return linkOf(response, 'successor-version')
  } catch {
    return undefined
  }
}
