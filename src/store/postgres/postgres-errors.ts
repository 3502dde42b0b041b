import { StoreUnavailableError } from '../../errors.ts'
import { DuplicateKeyNameError } from '../store.ts'

/** SQLSTATE classes and codes that mean "the database cannot do this now" rather than "this is wrong". */
const UNAVAILABLE_STATES = /^(08|53|57P|58)|^57014$|^40001$|^40P01$/
const NETWORK_ERRORS = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EPIPE',
  'EAI_AGAIN',
])

/**
 * A driver or server error as callers should see it: `StoreUnavailableError` (answered with 503) when the
 * database is down, overloaded, or the statement ran past its timeout; any other error unchanged.
 */
export function storeErrorOf(error: unknown): unknown {
  const { code, message } = error as { code?: string; message?: string }
  const unavailable =
    (code !== undefined && (UNAVAILABLE_STATES.test(code) || NETWORK_ERRORS.has(code))) ||
    /timeout|terminated|Connection ended|not queryable/i.test(message ?? '')
  return unavailable ? new StoreUnavailableError('the database is unreachable', { cause: error }) : error
}

/** A key insert that hit the one-active-key-per-name index becomes the error callers expect. */
export function keyNameTaken(error: unknown, name: string): unknown {
  return (error as { constraint?: string }).constraint === 'api_keys_active_name'
    ? new DuplicateKeyNameError(name)
    : error
}
