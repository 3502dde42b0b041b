/** A deprecated operation's schedule and what to do once its sunset has passed. */
export interface DeprecationPolicy {
  /** When the operation was deprecated (epoch milliseconds). */
  deprecatedAtMs: number
  /** When it is removed (epoch milliseconds). */
  sunsetAtMs: number
  /** The URL of what replaces it. */
  successor: string
  /** After the sunset: keep answering, or answer 410 Gone. */
  afterSunset: 'serve' | 'gone'
  /** What the 410 says instead. */
  goneMessage: string
}

/** getPet is deprecated as of interface 1.0.0 (released 1 November 2026) and removed on 5 December 2030. */
export const GET_PET_DEPRECATED_AT_MS = Date.UTC(2026, 10, 1)
export const GET_PET_SUNSET_AT_MS = Date.UTC(2030, 11, 5)

export function getPetDeprecation({
  publicBaseUrl,
  afterSunset,
}: {
  publicBaseUrl: string
  afterSunset: DeprecationPolicy['afterSunset']
}): DeprecationPolicy {
  return {
    deprecatedAtMs: GET_PET_DEPRECATED_AT_MS,
    sunsetAtMs: GET_PET_SUNSET_AT_MS,
    successor: `${publicBaseUrl}/pets`,
    afterSunset,
    goneMessage: 'getPet was removed on 5 December 2030: use GET /pets with a status filter',
  }
}
