import { AsyncLocalStorage } from 'node:async_hooks'
import { randomFillSync } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import { containsApiKey } from '../log/key-masking.ts'

const ID_BYTES = 16
// Random bytes for 256 ids, drawn at once (crypto.randomUUID keeps its own for 128).
const RANDOM = Buffer.allocUnsafeSlow(ID_BYTES * 256)
let drawn = RANDOM.length
// The id's text, rewritten in place for each id; the dashes never move.
const TEXT = Buffer.from('00000000-0000-4000-8000-000000000000', 'latin1')
// Where each byte's two hex digits go in the text.
const DIGITS_AT = [0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34]
const HEX = Buffer.from('0123456789abcdef', 'latin1')

/**
 * A random UUID (version 4, RFC 9562 §5.4), as `crypto.randomUUID()` makes, written as one flat string.
 * randomUUID joins 20 pieces (about 635 bytes allocated per id, flattened again when the header is
 * written); this one allocates its 36 characters, in half the time (docs/decisions.md, "Per-request cost").
 */
export function randomRequestId(): string {
  if (drawn === RANDOM.length) {
    randomFillSync(RANDOM)
    drawn = 0
  }
  for (let at = 0; at < ID_BYTES; at++) {
    let byte = RANDOM[drawn + at] as number
    // The version (4) in byte 6's high half, the variant (binary 10) in byte 8's top bits.
    if (at === 6) byte = (byte & 0x0f) | 0x40
    else if (at === 8) byte = (byte & 0x3f) | 0x80
    const digit = DIGITS_AT[at] as number
    TEXT[digit] = HEX[byte >> 4] as number
    TEXT[digit + 1] = HEX[byte & 0x0f] as number
  }
  drawn += ID_BYTES
  return TEXT.toString('latin1')
}

// A client's own request id is kept if it is short and plain; anything else is replaced, never logged as is.
export const CLIENT_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

// The id of the request on whose behalf the code now running was started, timers and promises included.
const requestContext = new AsyncLocalStorage<string>()
// Each request's id once made, kept on the request: an answer made below the framework (a slow body's
// 408) names it too. A property, not a WeakMap: an entry per request weighed on every collection.
const REQUEST_ID = Symbol('petstore.requestId')

/**
 * Fastify's `genReqId`: the client's `X-Request-Id` when acceptable and holding no key, else a new UUID. It
 * becomes the request context of all the request starts (docs/decisions.md, "The failing request's id").
 */
export function requestIdOf(request: IncomingMessage & { [REQUEST_ID]?: string }): string {
  const known = request[REQUEST_ID]
  if (known !== undefined) return known
  const given = request.headers['x-request-id']
  const id =
    typeof given === 'string' && CLIENT_REQUEST_ID.test(given) && !containsApiKey(given)
      ? given
      : randomRequestId()
  request[REQUEST_ID] = id
  requestContext.enterWith(id)
  return id
}

/** The id of the request the running code works for, if it works for one. */
export function currentRequestId(): string | undefined {
  return requestContext.getStore()
}
