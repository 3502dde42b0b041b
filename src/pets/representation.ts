import { createHash } from 'node:crypto'

/** A read's answer, serialized once: its exact bytes, strong validator, and extra headers. */
export interface Representation {
  /** A short body as a string, a long one as its bytes (see `bodyOf`). */
  body: string | Buffer
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
  return { body: bodyOf(body), etag: `"${digest.digest('base64url')}"`, headers }
}

// From this length on a body is kept as bytes, which Node writes as they are; a string is copied into the
// head's and encoded again on every answer, which costs more than the second write once the body is
// longer than this (docs/decisions.md, "Long answers kept as bytes").
const BYTES_FROM = 2048

function bodyOf(text: string): string | Buffer {
  if (text.length < BYTES_FROM) return text
  // Its own memory, exactly its size: a slice of Node's shared pool would keep the whole pool alive.
  const bytes = Buffer.allocUnsafeSlow(Buffer.byteLength(text))
  bytes.write(text)
  return bytes
}
