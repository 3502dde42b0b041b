import { createHash } from 'node:crypto'

/** A read's answer, serialized once: its exact bytes, strong validator, and extra headers. */
export interface Representation {
  body: string
  etag: string
  headers: Readonly<Record<string, string>>
}

/**
 * A strong ETag: a digest of the exact bytes sent and of the headers that go with them (a page's next
 * link: the same pets, once more follow, are another answer).
 */
export function representationOf(body: string, headers: Record<string, string> = {}): Representation {
  const digest = createHash('sha1').update(body)
  for (const [name, value] of Object.entries(headers)) digest.update(`\n${name}: ${value}`)
  return { body, etag: `"${digest.digest('base64url')}"`, headers }
}
