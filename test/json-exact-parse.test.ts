import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { inspect, isDeepStrictEqual } from 'node:util'
import fc from 'fast-check'
import { ApiError, ERROR_CODES } from '../src/errors.ts'
import { MAX_BODY_DEPTH, parseExactly } from '../src/http/json-exact-parse.ts'
import { scanJsonText } from '../src/http/json-text-scan.ts'

// The rule every body is read by, written the plain way: the reviver given each value's source text, and
// a separate pass for keys given twice. The parser must answer exactly as this does, bodies that skip the
// reviver included.
const FORBIDDEN = new Set(['__proto__', 'constructor', 'prototype'])
type Parsed = { value: unknown; duplicateKey: string | undefined; duplicateWithin: string | undefined }
function referenceParse(text: string): Parsed {
  const value: unknown = JSON.parse(text, (key, parsed, context?: { source?: string }) => {
    if (FORBIDDEN.has(key)) throw new ApiError('invalid_body', `body field "${key}" is not allowed`)
    const source = context?.source
    if (typeof parsed === 'number' && source !== undefined && source !== '-0' && !/[.eE]/.test(source))
      return BigInt(source)
    return parsed
  })
  return { value, ...referenceDuplicate(text) }
}

/**
 * The first key seen twice in one open object, found by a tokenizer: strings (a key when a colon follows),
 * brackets; and, when that object is not the top level, the top-level key whose value holds it.
 */
function referenceDuplicate(text: string): Omit<Parsed, 'value'> {
  const open: Array<Set<string> | null> = []
  let topKey: string | undefined
  for (const [token, string, colon] of text.matchAll(/("(?:[^"\\]|\\.)*")\s*(:)?|[{}[\]]/g)) {
    if (token === '{') open.push(new Set())
    else if (token === '[') open.push(null)
    else if (token === '}' || token === ']') open.pop()
    else if (colon !== undefined) {
      const key = JSON.parse(string as string) as string
      const keys = open.at(-1)
      if (keys?.has(key)) return { duplicateKey: key, duplicateWithin: open.length > 1 ? topKey : undefined }
      keys?.add(key)
      if (open.length === 1) topKey = key
    }
  }
  return { duplicateKey: undefined, duplicateWithin: undefined }
}

function outcome(parse: (text: string) => Parsed, text: string) {
  try {
    return parse(text)
  } catch (error) {
    if (error instanceof ApiError) return { refused: error.message }
    throw error
  }
}

// Every kind of number literal: the short integers the fast path takes, and each form that needs its source.
const numberArb = fc.oneof(
  fc.integer({ min: -999_999_999_999_999, max: 999_999_999_999_999 }).map(String),
  fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }).map(String),
  fc.constantFrom(
    '0',
    '-0',
    '1.0',
    '-0.0',
    '1.5',
    '1e3',
    '1E+2',
    '-2e-1',
    '9007199254740993',
    '1000000000000000',
  ),
)
const keyArb = fc.constantFrom(
  'a\\\\',
  'a',
  'b',
  '\\u0061',
  'name',
  'n\\u0061me',
  '__proto__',
  'constructor',
  'prototype',
  'x y',
  'é',
)
const space = fc.constantFrom('', ' ', '\n ')
const jsonText = fc.letrec<{ value: string; object: string; array: string }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    numberArb,
    fc.constantFrom('true', 'false', 'null', '"1.5e3"', '"-0"', '"\\"{"', '"\\\\"', '"a\\\\\\"b"'),
    tie('object'),
    tie('array'),
  ),
  object: fc
    .array(fc.tuple(keyArb, space, tie('value')), { maxLength: 4 })
    .map(
      (entries) =>
        `{${entries.map(([key, before, value]) => `${before}"${key}":${before}${value}`).join(',')}}`,
    ),
  array: fc.array(tie('value'), { maxLength: 4 }).map((items) => `[${items.join(', ')}]`),
}))

describe('a JSON body read with exact integers', () => {
  test('when a body is any mix of numbers, keys and nesting, then it reads exactly as through the reviver', () => {
    // Which way each body was read, and how it ended: every pairing the parser has must be reached.
    const paths: Record<string, number> = {}
    fc.assert(
      fc.property(jsonText.object, (text) => {
        const expected = outcome(referenceParse, text)
        const actual = outcome(parseExactly, text)
        assert.ok(isDeepStrictEqual(actual, expected), `${text}\n${inspect(actual)} ≠ ${inspect(expected)}`)
        const way = scanJsonText(text).shortIntegersOnly ? 'walked' : 'revived'
        const end =
          'refused' in expected ? 'refused' : expected.duplicateKey === undefined ? 'read' : 'duplicate'
        paths[`${way}, ${end}`] = (paths[`${way}, ${end}`] ?? 0) + 1
      }),
      { numRuns: 3000 },
    )
    for (const path of [
      'walked, read',
      'walked, refused',
      'revived, read',
      'revived, refused',
      'revived, duplicate',
    ])
      assert.ok((paths[path] ?? 0) >= 30, `${path}: ${paths[path] ?? 0} of 3000 (${inspect(paths)})`)
  })

  test('when a body nests deeper than 64 levels, then it is refused before it is read, whichever way', () => {
    const nested = (depth: number, inner = '1') =>
      `${'['.repeat(depth - 1)}{"a":${inner}}${']'.repeat(depth - 1)}`
    assert.equal(scanJsonText(nested(64)).depth, 64)
    assert.deepEqual(parseExactly(nested(64)), referenceParse(nested(64)))
    const tooDeep = /^request body is nested too deeply: at most 64 levels of objects and arrays$/
    // Short integers, an integer that needs its source, a key given twice, and deeper than the reviver's
    // stack (about 2,300 levels): the same refusal, never a RangeError or another reading.
    for (const text of [nested(65), nested(65, '12345678901234567'), nested(65, '1,"a":2'), nested(3000)])
      assert.throws(
        () => parseExactly(text),
        (error: unknown) => error instanceof ApiError && tooDeep.test(error.message),
      )
    // The error code's summary (README, OpenAPI document) says the same limit.
    assert.match(ERROR_CODES.malformed_json.summary, new RegExp(`nested more than ${MAX_BODY_DEPTH} levels`))
  })

  test('when integers a double cannot hold come in a body, then each is read as written', () => {
    const { value } = parseExactly('{"a":9007199254740993,"b":[-9223372036854775808,123456789012345]}')
    assert.deepEqual(value, { a: 9007199254740993n, b: [-9223372036854775808n, 123456789012345n] })
  })

  test('when __proto__ is a key, then it is refused and no prototype is touched', () => {
    assert.throws(() => parseExactly('{"a":1,"__proto__":{"polluted":1}}'), /"__proto__" is not allowed/)
    assert.throws(() => parseExactly('{"x":[{"__proto__":2}]}'), /"__proto__" is not allowed/)
    assert.equal(({} as Record<string, unknown>).polluted, undefined)
  })
})
