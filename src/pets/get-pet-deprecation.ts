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

// The one place getPet's dates are written: the headers, the route's documentation, the 410 and the
// GET_PET_AFTER_SUNSET setting's description all read them from here.
/** getPet is deprecated as of interface 1.0.0 (released 1 November 2026); exported for its tests. */
export const GET_PET_DEPRECATED_AT_MS = Date.UTC(2026, 10, 1)
/** getPet is scheduled for removal on this day (its Sunset). */
export const GET_PET_SUNSET_AT_MS = Date.UTC(2030, 11, 5)

const MONTHS = [
  'January',
  'February',
  'March',
  'April',
  'May',
  'June',
  'July',
  'August',
  'September',
  'October',
  'November',
  'December',
]
const sunset = new Date(GET_PET_SUNSET_AT_MS)

/**
 * The removal day as people read it: "5 December 2030". Not through `Intl`, whose first use costs every
 * command's start about 20 ms (docs/decisions.md, "Each command loads its own modules").
 */
export const GET_PET_SUNSET_DAY = `${sunset.getUTCDate()} ${MONTHS[sunset.getUTCMonth()]} ${sunset.getUTCFullYear()}`

/** A moment as the `Sunset` header writes it (RFC 8594: an HTTP date). */
export function httpDate(epochMs: number): string {
  return new Date(epochMs).toUTCString()
}

/** getPet's policy: its dates, its successor (listPets, under `publicBaseUrl`) and `GET_PET_AFTER_SUNSET`. */
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
    goneMessage: `getPet was removed on ${GET_PET_SUNSET_DAY}: use GET /pets with a status filter`,
  }
}
