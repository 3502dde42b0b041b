const QUOTE = 0x22
const BACKSLASH = 0x5c
const OPEN_OBJECT = 0x7b
const CLOSE_OBJECT = 0x7d
const OPEN_ARRAY = 0x5b
const CLOSE_ARRAY = 0x5d
const COMMA = 0x2c

/**
 * The first key that appears twice in one object of `text`, which must be valid JSON (parse it first).
 * JSON.parse keeps the last of repeated keys without a word; a body that says two things is refused instead.
 * Keys are compared after unescaping, so `"a"` and `"\u0061"` are the same key.
 */
export function findDuplicateKey(text: string): string | undefined {
  // One entry per open container: the keys seen so far for an object, null for an array.
  const open: Array<Set<string> | null> = []
  let keyExpected = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === QUOTE) {
      let end = i + 1
      while (text.charCodeAt(end) !== QUOTE) end += text.charCodeAt(end) === BACKSLASH ? 2 : 1
      const keys = open.at(-1)
      if (keyExpected && keys) {
        const key = JSON.parse(text.slice(i, end + 1)) as string
        if (keys.has(key)) return key
        keys.add(key)
        keyExpected = false
      }
      i = end
    } else if (c === OPEN_OBJECT) {
      open.push(new Set())
      keyExpected = true
    } else if (c === OPEN_ARRAY) {
      open.push(null)
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      open.pop()
    } else if (c === COMMA) {
      keyExpected = open.at(-1) instanceof Set
    }
  }
  return undefined
}
