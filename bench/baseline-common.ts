import { createHash, timingSafeEqual } from 'node:crypto'

// What both baselines (bare node:http, minimal Fastify) do alike, so that neither pays for it differently.

/**
 * Creates are kept as a store would keep them, but in a ring of fixed size: a baseline must cost the same
 * in its last round as in its first, and a list growing with every create (over a million in a
 * seven-round run) would make its garbage collection, and so its later rounds, ever slower.
 */
export const KEPT_CREATES = 10_000

const sha256 = (text: string) => createHash('sha256').update(text).digest()

/**
 * Whether an Authorization header carries `key` as a bearer token. Digests have a fixed length, so
 * comparing them takes the same time whatever key was sent.
 */
export function bearerCheck(key: string): (authorization: string | undefined) => boolean {
  const digest = sha256(key)
  return (authorization) => {
    const match = /^bearer +(\S+)$/i.exec(authorization ?? '')
    return match?.[1] !== undefined && timingSafeEqual(sha256(match[1]), digest)
  }
}
