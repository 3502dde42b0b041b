import type { DeprecationPolicy } from '../http/deprecation.ts'

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
