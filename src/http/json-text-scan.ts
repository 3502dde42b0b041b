const QUOTE = 0x22
const BACKSLASH = 0x5c
const OPEN_OBJECT = 0x7b
const CLOSE_OBJECT = 0x7d
const OPEN_ARRAY = 0x5b
const CLOSE_ARRAY = 0x5d
const COMMA = 0x2c
const MINUS = 0x2d
const PLUS = 0x2b
const POINT = 0x2e
const ZERO = 0x30
const NINE = 0x39
const LOWER_E = 0x65
const UPPER_E = 0x45

// An integer of at most 15 digits is below 2^53: the double JSON.parse makes of it is the integer itself.
const EXACT_DIGITS = 15

/** What one pass over a JSON text finds that JSON.parse's result no longer shows. */
export interface JsonTextFacts {
  /** The first key that appears twice in one object, unescaped. */
  duplicateKey: string | undefined
  /** The top-level key whose value holds that object, when it is not the top level itself. */
  duplicateWithin: string | undefined
  /**
   * Whether every number is an integer of at most 15 digits and not `-0`, so that each double JSON.parse
   * made is exact. False when a key appears twice, so that the reviver names the keys as it always has.
   */
  shortIntegersOnly: boolean
  /** How many objects and arrays the deepest value is inside: 1 for a flat object. */
  depth: number
}

/**
 * Scans `text`, which must be valid JSON (parse it first), for what JSON.parse hides: a key repeated (keys
 * compared unescaped) and numbers a double does not hold exactly (docs/decisions.md, "Body").
 */
export function scanJsonText(text: string): JsonTextFacts {
  // One entry per open container: the keys seen so far for an object, null for an array.
  const open: Array<Set<string> | null> = []
  let keyExpected = false
  let shortIntegersOnly = true
  let duplicateKey: string | undefined
  let duplicateWithin: string | undefined
  // The last key of the top-level object: the field whose value the scan is in, once deeper.
  let topKey: string | undefined
  let depth = 0
  // Where the next backslash is, at or after the scan: strings before it have no escape, and end at the
  // next quote, found by indexOf rather than a unit at a time.
  let backslash = -1
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === QUOTE) {
      if (backslash < i) {
        backslash = text.indexOf('\\', i)
        if (backslash === -1) backslash = text.length
      }
      let end = text.indexOf('"', i + 1)
      const escapes = backslash < end
      if (escapes) {
        end = i + 1
        for (
          let unit = text.charCodeAt(end);
          unit !== QUOTE && end < text.length;
          unit = text.charCodeAt(end)
        )
          end += unit === BACKSLASH ? 2 : 1
      }
      if (end === -1 || end >= text.length) throw new SyntaxError('unterminated string: parse the text first')
      const keys = open.at(-1)
      if (keyExpected && keys) {
        const key = escapes ? (JSON.parse(text.slice(i, end + 1)) as string) : text.slice(i + 1, end)
        if (keys.has(key) && duplicateKey === undefined) {
          duplicateKey = key
          if (open.length > 1) duplicateWithin = topKey
        }
        keys.add(key)
        if (open.length === 1) topKey = key
        keyExpected = false
      }
      i = end
    } else if (c === MINUS || (c >= ZERO && c <= NINE)) {
      // The whole number: in valid JSON, a run of digits, signs, a point and an exponent's letter.
      let digits = 0
      let end = i
      for (; end < text.length; end++) {
        const unit = text.charCodeAt(end)
        if (unit >= ZERO && unit <= NINE) digits++
        else if (unit === POINT || unit === LOWER_E || unit === UPPER_E) shortIntegersOnly = false
        else if (unit !== MINUS && unit !== PLUS) break
      }
      if (digits > EXACT_DIGITS || (c === MINUS && text.charCodeAt(i + 1) === ZERO)) shortIntegersOnly = false
      i = end - 1
    } else if (c === OPEN_OBJECT) {
      depth = Math.max(depth, open.push(new Set()))
      keyExpected = true
    } else if (c === OPEN_ARRAY) {
      depth = Math.max(depth, open.push(null))
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      open.pop()
    } else if (c === COMMA) {
      keyExpected = open.at(-1) instanceof Set
    }
  }
  return {
    duplicateKey,
    duplicateWithin,
    shortIntegersOnly: shortIntegersOnly && duplicateKey === undefined,
    depth,
  }
}
