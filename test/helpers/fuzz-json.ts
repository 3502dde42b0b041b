import fc from 'fast-check'

// JSON texts for createPet, generated from parts whose validity is known, so every body carries the verdict
// the service must reach (README, "The API in short": "Input is strict"): a valid NewPet is created exactly as sent, anything
// else is refused.

export const INT64_MIN = -(2n ** 63n)
export const INT64_MAX = 2n ** 63n - 1n

/** How a string is written in JSON: as JSON.stringify does, every UTF-16 unit escaped, or some of them. */
export type Escaping = { mode: 'minimal' } | { mode: 'all'; upper: boolean } | { mode: 'every'; step: number }

export const escapingArb: fc.Arbitrary<Escaping> = fc.oneof(
  fc.constant({ mode: 'minimal' } as const),
  fc.boolean().map((upper) => ({ mode: 'all', upper }) as const),
  fc.integer({ min: 2, max: 4 }).map((step) => ({ mode: 'every', step }) as const),
)

const unicodeEscape = (unit: number, upper = false) => {
  const hex = unit.toString(16).padStart(4, '0')
  return `\\u${upper ? hex.toUpperCase() : hex}`
}

/** `value` as a JSON string literal; lone surrogates always as \u escapes (they have no UTF-8 form). */
export function jsonString(value: string, escaping: Escaping = { mode: 'minimal' }): string {
  let out = '"'
  let index = 0
  for (const char of value) {
    const escapeAll =
      escaping.mode === 'all' ||
      (escaping.mode === 'every' && index % escaping.step === 0) ||
      !char.isWellFormed()
    const upper = escaping.mode === 'all' && escaping.upper
    if (escapeAll) for (let i = 0; i < char.length; i++) out += unicodeEscape(char.charCodeAt(i), upper)
    else if (char === '/' && escaping.mode === 'every') out += '\\/'
    else out += JSON.stringify(char).slice(1, -1)
    index++
  }
  return `${out}"`
}

/** A part of a body with its verdict: `ok` parts make a valid NewPet, `bad` ones make it invalid. */
export interface Part {
  text: string
  ok: boolean
}

// Code points by role in the name rule (1–100 code points, one visible, no control, no lone surrogate).
const VISIBLE = [
  'a',
  'Z',
  '7',
  '~',
  '"',
  '\\',
  '/',
  '<',
  'é',
  'ß',
  'ж',
  '名',
  'א',
  'ب',
  '🐈',
  '𝔘',
  '𠀀',
  '\u{E000}',
]
// White space and invisible format characters: allowed, but a name of only these is refused.
const INVISIBLE = [
  ' ',
  '\u00a0',
  '\u2028',
  '\u3000',
  '\u200b',
  '\u200d',
  '\u200f',
  '\u202e',
  '\u2066',
  '\ufeff',
]
// Combining marks, variation selectors, noncharacters: allowed anywhere.
const NEUTRAL = ['\u0301', '\u0308', '\ufe0f', '\u{1f3fd}', '\uffff', '\u{10ffff}']
const CONTROLS = ['\u0000', '\t', '\n', '\r', '\u001b', '\u001f', '\u007f', '\u0080', '\u0085', '\u009f']
const LONE_SURROGATES = ['\ud800', '\udbff', '\udc00', '\udfff', '\udc08\ud83d']

const anyAllowed = fc.constantFrom(...VISIBLE, ...INVISIBLE, ...NEUTRAL)

/** A name the service must accept, with the JS string it must store. */
export const validNameArb: fc.Arbitrary<string> = fc
  .tuple(
    fc.oneof(fc.array(anyAllowed, { maxLength: 99 }), fc.array(anyAllowed, { minLength: 99, maxLength: 99 })),
    fc.constantFrom(...VISIBLE),
    fc.nat(),
  )
  .map(([chars, visible, at]) => {
    chars.splice(at % (chars.length + 1), 0, visible)
    return chars.join('')
  })

const insertInto = (name: string, inserted: string, at: number) => {
  const chars = [...name]
  chars.splice(at % (chars.length + 1), 0, inserted)
  return chars.join('')
}

/** A name value (JSON text) the service must refuse. */
const badNameTextArb: fc.Arbitrary<string> = fc.oneof(
  fc.constant('""'),
  fc
    .tuple(fc.array(anyAllowed, { minLength: 100, maxLength: 130 }), fc.constantFrom(...VISIBLE))
    .map(([chars, visible]) => jsonString(visible + chars.join(''))),
  fc.integer({ min: 101, max: 5000 }).map((n) => jsonString('x'.repeat(n))),
  fc.array(fc.constantFrom(...INVISIBLE), { minLength: 1, maxLength: 20 }).map((c) => jsonString(c.join(''))),
  fc
    .tuple(validNameArb, fc.constantFrom(...CONTROLS, ...LONE_SURROGATES), fc.nat(), escapingArb)
    .map(([name, bad, at, escaping]) => jsonString(insertInto(name, bad, at), escaping)),
  fc.constantFrom('123', 'null', 'true', '[]', '{}', '["Rex"]', '{"first":"Rex"}', '1e2', '-0'),
)

/** An int64 literal the service must accept (edges, ±2^53 neighbours, anything in range). */
export const validCategoryIdArb: fc.Arbitrary<bigint> = fc.oneof(
  fc.constantFrom(
    INT64_MIN,
    INT64_MIN + 1n,
    INT64_MAX - 1n,
    INT64_MAX,
    0n,
    -1n,
    1n,
    2n ** 53n - 1n,
    2n ** 53n,
    2n ** 53n + 1n,
    -(2n ** 53n) - 1n,
    2n ** 31n,
    2n ** 32n + 1n,
  ),
  fc.bigInt({ min: INT64_MIN, max: INT64_MAX }),
  fc.bigInt({ min: -1000n, max: 1000n }),
)

/** A categoryId (JSON text) the service must refuse: out of range, not an integer literal, wrong type. */
const badCategoryIdTextArb: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(INT64_MAX + 1n, INT64_MIN - 1n, INT64_MAX * 10n, 10n ** 19n, -(10n ** 30n)).map(String),
  fc.bigInt({ min: INT64_MAX + 1n, max: 2n ** 70n }).map(String),
  fc.integer({ min: 20, max: 400 }).map((n) => `${'9'.repeat(n)}`),
  fc.constantFrom(
    '-0',
    '0.0',
    '1.0',
    '1.5',
    '1e3',
    '1E3',
    '1e-3',
    '-1e+2',
    '9223372036854775807.0',
    '9.223372036854776e18',
    '1e400',
    '"1"',
    '"9223372036854775807"',
    'null',
    'true',
    'false',
    '[1]',
    '{"value":1}',
  ),
  // Not JSON at all: the body becomes malformed.
  fc.constantFrom('01', '+1', '.5', '1.', '0x10', 'NaN', 'Infinity', '-', '1_000', "'1'"),
)

const STATUSES = ['available', 'pending', 'sold'] as const
export type PetStatus = (typeof STATUSES)[number]
export const statusArb: fc.Arbitrary<PetStatus> = fc.constantFrom(...STATUSES)

const badStatusTextArb: fc.Arbitrary<string> = fc.oneof(
  fc
    .constantFrom('Available', 'SOLD', '', 'sold ', ' pending', 'lost', 'availablé')
    .map((s) => jsonString(s)),
  fc.constantFrom('null', '1', '["sold"]', 'true', '{}'),
)

/** Keys that must never be accepted (mass assignment, prototype pollution, near misses of real fields). */
const extraKeyArb: fc.Arbitrary<string> = fc.constantFrom(
  'id',
  'created_at',
  'createdAt',
  'owner',
  'admin',
  'apiKeyId',
  '__proto__',
  'constructor',
  'prototype',
  '__proto__ ',
  '__PROTO__',
  'Name',
  'name ',
  'categoryID',
  '',
  'status\u0000',
)
const extraValueArb: fc.Arbitrary<string> = fc.constantFrom(
  '1',
  '9223372036854775807',
  '"x"',
  '{"admin":true}',
  'null',
  '[]',
)

/** The pet a valid body describes, as the service must store and echo it. */
export interface SentPet {
  name: string
  categoryId: bigint
  status?: PetStatus
}

export interface PetBody {
  text: string
  /** `valid`: must be created exactly as `sent`; `invalid`: must be refused (400, or 413 when too big). */
  verdict: 'valid' | 'invalid'
  sent?: SentPet
}

/** `arbitrary` once in `1 + odds` draws, null otherwise (fc.option's `freq` is the chance of null). */
export const rarely = <T>(arbitrary: fc.Arbitrary<T>, odds: number): fc.Arbitrary<T | null> =>
  fc.oneof({ weight: odds, arbitrary: fc.constant(null) }, { weight: 1, arbitrary })

const whitespaceArb = fc.constantFrom('', ' ', '\n', '\t', '\r\n  ')

/** NewPet bodies: valid ones and near misses (one or more bad parts, missing, repeated or unknown keys). */
export const petBodyArb: fc.Arbitrary<PetBody> = fc
  .record({
    name: validNameArb,
    nameEscaping: escapingArb,
    badName: rarely(badNameTextArb, 8),
    categoryId: validCategoryIdArb,
    badCategoryId: rarely(badCategoryIdTextArb, 8),
    status: fc.option(statusArb),
    statusEscaping: escapingArb,
    badStatus: rarely(badStatusTextArb, 12),
    missing: rarely(fc.constantFrom('name', 'categoryId'), 16),
    extra: rarely(fc.tuple(extraKeyArb, escapingArb, extraValueArb), 10),
    repeated: rarely(fc.tuple(fc.constantFrom('name', 'categoryId', 'status'), escapingArb), 14),
    order: fc.array(fc.nat(), { minLength: 5, maxLength: 5 }),
    space: whitespaceArb,
  })
  .map((r) => {
    const members: Array<{ key: string; value: Part }> = []
    const name = r.badName ?? jsonString(r.name, r.nameEscaping)
    if (r.missing !== 'name')
      members.push({ key: jsonString('name'), value: { text: name, ok: r.badName === null } })
    const categoryId = r.badCategoryId ?? String(r.categoryId)
    if (r.missing !== 'categoryId')
      members.push({
        key: jsonString('categoryId'),
        value: { text: categoryId, ok: r.badCategoryId === null },
      })
    if (r.badStatus !== null) members.push({ key: '"status"', value: { text: r.badStatus, ok: false } })
    else if (r.status !== null)
      members.push({
        key: jsonString('status'),
        value: { text: jsonString(r.status, r.statusEscaping), ok: true },
      })
    if (r.extra !== null)
      members.push({ key: jsonString(r.extra[0], r.extra[1]), value: { text: r.extra[2], ok: false } })
    if (r.repeated !== null) {
      // Twice when the key is not there yet: a repeat is what makes the body invalid.
      const [key, escaping] = r.repeated
      const value = key === 'name' ? '"again"' : key === 'categoryId' ? '2' : '"sold"'
      const present = members.some((member) => JSON.parse(member.key) === key)
      for (let i = present ? 1 : 0; i < 2; i++)
        members.push({ key: jsonString(key, escaping), value: { text: value, ok: true } })
    }
    const ordered = members
      .map((member, i) => ({ member, rank: r.order[i] ?? 0 }))
      .sort((a, b) => a.rank - b.rank)
      .map(({ member }) => member)
    const s = r.space
    const written = ordered.map(({ key, value }) => `${s}${key}${s}:${s}${value.text}`)
    const text = `${s}{${written.join(`${s},`)}${s}}${s}`
    const valid = r.missing === null && r.repeated === null && members.every(({ value }) => value.ok)
    if (!valid) return { text, verdict: 'invalid' as const }
    const sent: SentPet = {
      name: r.name,
      categoryId: r.categoryId,
      ...(r.status ? { status: r.status } : {}),
    }
    return { text, verdict: 'valid' as const, sent }
  })

/** A plain valid NewPet text: the envelope and credential properties vary everything but the body. */
export const simplePetArb: fc.Arbitrary<{ text: string; sent: SentPet }> = fc
  .record({ name: validNameArb, categoryId: validCategoryIdArb, status: fc.option(statusArb) })
  .map(({ name, categoryId, status }) => ({
    sent: { name, categoryId, ...(status ? { status } : {}) },
    text: `{"name":${jsonString(name)},"categoryId":${categoryId}${status ? `,"status":"${status}"` : ''}}`,
  }))
