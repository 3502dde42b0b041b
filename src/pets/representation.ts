import { createHash } from 'node:crypto'

/** A read's answer, serialized once: its exact bytes, strong validator, and extra headers. */
export interface Representation {
  body: string
  etag: string
  headers: Readonly<Record<string, string>>
}

/** A strong ETag: a digest of the exact bytes sent. */
export function representationOf(body: string, headers: Record<string, string> = {}): Representation {
  return { body, etag: `"${createHash('sha1').update(body).digest('base64url')}"`, headers }
}
