import fc from 'fast-check'
import { INT64_MAX, INT64_MIN, validCategoryIdArb } from './fuzz-json.ts'

// Query strings and path segments as they go on the wire, each with the value the server must decode from
// it, and the verdicts the README's strictness rules give: unknown, repeated or malformed → 400.

/**
 * `text` percent-encoded as a URL component: every character that is not unreserved (RFC 3986) always, and
 * unreserved ones where `mask` has a bit set, so the decoded value is `text` whichever way it is written.
 */
export function encodeComponent(text: string, mask: number): string {
  const percentEncoded = (char: string) =>
    [...Buffer.from(char)].map((byte) => `%${byte.toString(16).padStart(2, '0').toUpperCase()}`).join('')
  return [...text]
    .map((char, i) =>
      /^[A-Za-z0-9._~-]$/.test(char) && !((mask >> (i % 16)) & 1) ? char : percentEncoded(char),
    )
    .join('')
}

const encodedArb = (plain: string) =>
  fc
    .oneof({ weight: 3, arbitrary: fc.constant(0) }, fc.nat(0xffff))
    .map((mask) => ({ plain, raw: encodeComponent(plain, mask) }))

/** A query parameter on the wire, with the name and value the server must decode from it. */
export interface QueryPart {
  raw: string
  name: string
  value: string
}

// biome-ignore format: a list of cases
const LIMITS = ['1', '5', '20', '100', '0', '101', '-1', '010', '1e1', '2.5', '0x10', ' 5', '+5', '', 'abc',
  '99999999999999999999', '1000000']
const STATUSES = ['available', 'pending', 'sold', 'Sold', 'lost', '', 'sold,pending']
// biome-ignore format: a list of cases
const NAMES = ['limit', 'status', 'cursor', 'offset', 'page', 'api_key', 'access_token', 'LIMIT', '__proto__',
  'constructor', 'limit[]', '']
// `{CURSORn}`: the n-th cursor the test collected from real next links; the others are forged or broken.
const CURSORS = ['{CURSOR0}', '{CURSOR1}', '{CURSOR2}', 'abc.def', 'AAAA.BBBB', '', 'a.b.c', '%%%']

/** listPets query parameters, known and unknown, valid and not, encoded in various ways. */
export const queryPartArb: fc.Arbitrary<QueryPart> = fc
  .oneof(
    fc.tuple(fc.constant('limit'), fc.constantFrom(...LIMITS)),
    fc.tuple(fc.constant('status'), fc.constantFrom(...STATUSES)),
    fc.tuple(fc.constant('cursor'), fc.constantFrom(...CURSORS)),
    fc.tuple(fc.constantFrom(...NAMES), fc.constantFrom('1', 'x', '')),
  )
  .chain(([name, value]) =>
    fc.tuple(
      encodedArb(name),
      // Placeholders (filled in when sent) and broken escapes go out as they are.
      /[{%]/.test(value) ? fc.constant({ plain: value, raw: value }) : encodedArb(value),
    ),
  )
  .map(([name, value]) => ({ raw: `${name.raw}=${value.raw}`, name: name.plain, value: value.plain }))

export interface KnownCursor {
  cursor: string
  status?: string
  /** The id of the last pet of the page whose next link carried this cursor. */
  afterId: bigint
}

/**
 * What listPets must make of these parameters: the page query when every parameter is known, given once
 * and valid (a cursor only with the status it was made for), undefined for a 400.
 */
export function listQueryOf(
  parts: QueryPart[],
  cursors: KnownCursor[],
): { limit: number; status?: string; afterId?: bigint } | undefined {
  const byName = Map.groupBy(parts, (part) => part.name)
  const one = (name: string) => byName.get(name)?.[0]?.value
  const [limit, status, cursorText] = [one('limit'), one('status'), one('cursor')]
  const cursor = cursors.find((known) => known.cursor === cursorText)
  const valid =
    [...byName].every(
      ([name, given]) => ['limit', 'status', 'cursor'].includes(name) && given.length === 1,
    ) &&
    (limit === undefined || (/^[1-9][0-9]*$/.test(limit) && Number(limit) <= 100)) &&
    (status === undefined || ['available', 'pending', 'sold'].includes(status)) &&
    (cursorText === undefined || (cursor !== undefined && cursor.status === status))
  if (!valid) return undefined
  return {
    limit: Number(limit ?? 20),
    ...(status ? { status } : {}),
    ...(cursor ? { afterId: cursor.afterId } : {}),
  }
}

/** A petId path segment on the wire and the value the router must decode; `{EXISTING}`: a stored pet's id. */
export const petIdSegmentArb: fc.Arbitrary<{ raw: string; decoded: string }> = fc.oneof(
  fc.constant({ raw: '{EXISTING}', decoded: '{EXISTING}' }),
  fc
    .oneof(
      validCategoryIdArb.map(String),
      // biome-ignore format: a list of cases
      fc.constantFrom('0', '-0', '01', '+1', '1.0', '1e3', '0x1F', ' 1', '1 ', '١', '９', '1/2', '..', '.',
        '-', 'abc', 'null', String(2n ** 63n), String(-(2n ** 63n) - 1n), '9'.repeat(25), '9'.repeat(150)),
    )
    .chain((plain) => encodedArb(plain))
    .map(({ plain, raw }) => ({ raw, decoded: plain })),
)

const INTEGER_LITERAL = /^(?:0|-?[1-9][0-9]*)$/

/** Whether getPet must take the decoded petId (then 200 or 404) rather than refuse it with 400. */
export function isPetId(raw: string, decoded: string): boolean {
  return (
    raw.length <= 100 &&
    INTEGER_LITERAL.test(decoded) &&
    BigInt(decoded) >= INT64_MIN &&
    BigInt(decoded) <= INT64_MAX
  )
}

/** Targets the router must refuse or not find, learning nothing from them. */
// biome-ignore format: a list of cases
export const oddTargetArb: fc.Arbitrary<string> = fc.constantFrom('/v1/pets/', '/v1/pets//1', '/v1/pets/1/',
  '/v1/pets/1/owner', '/v1//pets', '/v1/pets/%', '/v1/pets/%G1', '/v1/pets/%E0%A4%A', '/v1/pets/%00',
  '/v1/pets/%2e%2e', '/v1/pets/..%2F..%2Fetc%2Fpasswd', '/v1/pets/1%3Fx=1', '/v1/pets;limit=5',
  '/v1/pets?limit=%ZZ', '/v1/pets?%', '/v1/pets?&&&', '/v1/pets#frag', '/V1/PETS', '/v1/Pets/1',
  '/v1/pets/1?', 'http://petstore.test/v1/pets', '*', '/v1/pets/\u0661', '/v1/pets/%F0%9F%90%88',
  '/v1/openapi.json/../pets', '/healthz/../v1/pets', '/v1/pets?limit=5&limit=5', '/v1/pets?limit=5#x')
