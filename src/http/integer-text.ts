// A count written with `String()` stays in V8's number-to-string cache, in the old generation, until
// another number takes its slot: one that changes every request (a rate limit's remaining calls) was kept
// past two scavenges and promoted, for a major collection to free (docs/benchmarks/tuning.md, "What the
// service promotes").
const UNDER_A_THOUSAND = Array.from({ length: 1000 }, (_, n) => `${n}`)

/** '000' … '999': the groups of three digits after an integer's first. */
export const THREE_DIGITS: readonly string[] = UNDER_A_THOUSAND.map((text) => text.padStart(3, '0'))

/** `String(n)`, made from groups of three digits for a non-negative safe integer, so kept in no cache. */
export function integerText(n: number): string {
  if (!(Number.isSafeInteger(n) && n >= 0)) return String(n)
  if (n < 1000) return UNDER_A_THOUSAND[n] as string
  let text = THREE_DIGITS[n % 1000] as string
  let rest = Math.floor(n / 1000)
  while (rest >= 1000) {
    text = (THREE_DIGITS[rest % 1000] as string) + text
    rest = Math.floor(rest / 1000)
  }
  return (UNDER_A_THOUSAND[rest] as string) + text
}
