import { randomFillSync } from 'node:crypto'

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
