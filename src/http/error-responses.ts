import Type, { type TSchema } from 'typebox'
import { ERROR_CODES, type ErrorCode } from '../errors.ts'

// RFC 6750 §3: every 401 carries the bearer challenge.
const CHALLENGE = { 'WWW-Authenticate': { type: 'string', description: 'The bearer challenge (RFC 6750).' } }

/**
 * The error responses of an operation, for its route schema: one entry per status, its description made
 * from the summaries of the codes the operation can answer with, so the document never restates them.
 */
export function errorResponses(...codes: ErrorCode[]): Record<number, TSchema> {
  const byStatus = new Map<number, ErrorCode[]>()
  for (const code of codes) {
    const { status } = ERROR_CODES[code]
    byStatus.set(status, [...(byStatus.get(status) ?? []), code])
  }
  return Object.fromEntries(
    [...byStatus].map(([status, list]) => [
      status,
      Type.Ref('Error', {
        description: list.map((code) => `\`${code}\`: ${ERROR_CODES[code].summary}`).join(' '),
        ...(status === 401 ? { headers: CHALLENGE } : {}),
      }),
    ]),
  )
}

/** What can go wrong with any authenticated operation. */
export const COMMON_ERRORS: ErrorCode[] = [
  'bad_request',
  'unauthorized',
  'internal_error',
  'service_unavailable',
]
