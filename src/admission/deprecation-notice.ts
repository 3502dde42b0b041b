import type { FastifyReply } from 'fastify'
import { ApiError } from '../errors.ts'
import { type DeprecationPolicy, httpDate } from '../pets/get-pet-deprecation.ts'

/** `Deprecation` (RFC 9745, a structured date), `Sunset` (RFC 8594, an HTTP date) and the successor `Link`. */
export function deprecationHeaders(
  policy: DeprecationPolicy,
): Readonly<{ deprecation: string; sunset: string; link: string }> {
  return {
    deprecation: `@${Math.floor(policy.deprecatedAtMs / 1000)}`,
    sunset: httpDate(policy.sunsetAtMs),
    link: `<${policy.successor}>; rel="successor-version"`,
  }
}

/**
 * Announces a deprecation on every answer of the operation, a 401 included: `Deprecation` (RFC 9745),
 * `Sunset` (RFC 8594) and a `Link` to the successor. Once the sunset has passed and the policy says so,
 * returns the 410 to answer instead (docs/decisions.md, "Deprecation date", "After the sunset").
 */
export function announceDeprecation(policy: DeprecationPolicy, now: () => number) {
  const headers = deprecationHeaders(policy)
  return function markDeprecated(reply: FastifyReply): ApiError | undefined {
    // One by one: `reply.headers(object)` reads each value by a megamorphic keyed load (docs/decisions.md,
    // "Headers set one by one").
    reply
      .header('deprecation', headers.deprecation)
      .header('sunset', headers.sunset)
      .header('link', headers.link)
    if (policy.afterSunset === 'gone' && now() >= policy.sunsetAtMs) {
      return new ApiError('gone', policy.goneMessage)
    }
    return undefined
  }
}
