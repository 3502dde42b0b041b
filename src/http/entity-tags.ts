/**
 * Whether an `If-None-Match` header matches `etag` (RFC 9110 §13.1.2): `*`, or a list of entity tags
 * compared weakly (a `W/` prefix does not matter).
 */
export function ifNoneMatchHits(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false
  if (header.trim() === '*') return true
  return header.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag)
}
