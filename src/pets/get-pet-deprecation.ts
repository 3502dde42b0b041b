import type { Config } from '../config.ts'
import type { DeprecationPolicy } from '../http/deprecation.ts'

/** getPet is deprecated as of interface 1.0.0 (released 1 November 2026) and removed on 5 December 2030. */
export const GET_PET_DEPRECATED_AT_MS = Date.UTC(2026, 10, 1)
export const GET_PET_SUNSET_AT_MS = Date.UTC(2030, 11, 5)

export function getPetDeprecation(config: Config): DeprecationPolicy {
  return {
    deprecatedAtMs: GET_PET_DEPRECATED_AT_MS,
    sunsetAtMs: GET_PET_SUNSET_AT_MS,
    successor: `${config.PUBLIC_BASE_URL}/pets`,
    afterSunset: config.GET_PET_AFTER_SUNSET,
    goneMessage: 'getPet was removed on 5 December 2030: use GET /pets with a status filter',
  }
}
