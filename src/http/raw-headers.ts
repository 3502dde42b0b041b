/**
 * How many times a header was sent. Node keeps only the first of some repeated headers (Authorization,
 * Content-Type…); a request that repeats one is ambiguous and is refused instead.
 */
export function countHeader(rawHeaders: readonly string[], lowerCaseName: string): number {
  let count = 0
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i] as string
    if (name.length === lowerCaseName.length && name.toLowerCase() === lowerCaseName) count++
  }
  return count
}
