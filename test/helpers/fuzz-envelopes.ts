import fc from 'fast-check'
import { type PetBody, petBodyArb, type SentPet, simplePetArb } from './fuzz-json.ts'

// What surrounds a body: other JSON than a NewPet, the createPet envelope (content type, charset, encoding,
// framing, bytes) and the credentials, each with the verdict the service must reach. `{KEY}` and `{REVOKED}`
// in a header stand for the valid and a revoked key (filled in when sent, so a counterexample reads well).

export type HeaderLine = [string, string | Buffer]

/** Bodies that are not a NewPet object at all: other JSON values, deep nesting, broken or doubled JSON. */
export const notAPetBodyArb: fc.Arbitrary<PetBody> = fc
  .oneof(
    fc.jsonValue().map((value) => JSON.stringify(value)),
    // biome-ignore format: a list of cases
    fc.constantFrom('null', '"pet"', '1', '[]', '{}', '', '   ', '\u00a0{}', '{"name":"a","categoryId":1}{}',
      '{"name":"a","categoryId":1} x', '{"name":"a",}', "{'name':'a','categoryId':1}",
      '{"name":"a"/* c */,"categoryId":1}', '{"name":"a","categoryId":1', '{"name":"a\\x41","categoryId":1}'),
    fc.integer({ min: 1, max: 2000 }).map((depth) => `${'['.repeat(depth)}${']'.repeat(depth)}`),
    fc
      .tuple(fc.integer({ min: 1, max: 600 }), fc.constantFrom('a', '__proto__'))
      .map(
        ([depth, key]) =>
          `{"name":"a","categoryId":1,"x":${`{"${key}":`.repeat(depth)}1${'}'.repeat(depth)}}`,
      ),
    petBodyArb.map((body) => `[${body.text}]`),
    // Cut before the closing brace: never a whole JSON value.
    fc.tuple(petBodyArb, fc.nat()).map(([body, cut]) => body.text.slice(0, cut % body.text.lastIndexOf('}'))),
  )
  .map((text) => ({ text, verdict: 'invalid' as const }))

/** One part of an envelope and what must come of it: 'ok' is accepted, a number is a status it may get. */
type Verdict = 'ok' | number
interface Lines {
  lines: HeaderLine[]
  verdict: Verdict[]
}

const header = (name: string, verdict: Verdict[]) => (value: string | Buffer) => ({
  lines: [[name, value]] as HeaderLine[],
  verdict,
})

const contentTypeArb = fc.oneof<fc.Arbitrary<Lines>[]>(
  // biome-ignore format: a list of cases
  fc.constantFrom('application/json', 'application/json; charset=utf-8', 'application/json;charset=UTF-8',
    'Application/JSON', 'application/json; charset="utf-8"', 'application/json ; charset=utf8')
    .map(header('Content-Type', ['ok'])),
  // biome-ignore format: a list of cases
  fc.constantFrom('text/plain', 'text/json', 'application/x-www-form-urlencoded',
    'multipart/form-data; boundary=x', 'application/jsonx', 'application/json-patch+json',
    'application/merge-patch+json', 'application/vnd.api+json', 'application/*', '*/*',
    'application/json; charset=iso-8859-1', 'application/json; charset=utf-16',
    'application/json; charset=utf-7', 'application/json; charset=""', 'application/json, text/plain', 'json',
    'application/json\u00e9')
    .map((value) => header('Content-Type', [415])(Buffer.from(value, 'latin1'))),
  fc.constant<Lines>({ lines: [], verdict: [400, 415] }),
  fc.constant(header('Content-Type', [400, 415])('')),
  fc.constantFrom('application/json', 'text/plain').map(
    (second): Lines => ({
      lines: [['Content-Type', 'application/json'] as HeaderLine, ['Content-Type', second] as HeaderLine],
      verdict: [400, 415],
    }),
  ),
)

const contentEncodingArb: fc.Arbitrary<Lines> = fc.oneof(
  { weight: 3, arbitrary: fc.constant<Lines>({ lines: [], verdict: ['ok'] }) },
  fc.constantFrom('identity', 'IDENTITY').map(header('Content-Encoding', ['ok'])),
  fc
    .constantFrom('gzip', 'br', 'deflate', 'gzip, identity', 'x-custom', 'zstd', '')
    .map(header('Content-Encoding', [415])),
)

// Byte sequences that are not UTF-8: lone bytes, overlong forms, surrogates, beyond U+10FFFF, truncations.
// biome-ignore format: a list of cases
const INVALID_UTF8 = [[0xff], [0xfe], [0x80], [0xc0, 0xaf], [0xe0, 0x80, 0xaf], [0xed, 0xa0, 0x80],
  [0xf4, 0x90, 0x80, 0x80], [0xf8, 0x88, 0x80, 0x80, 0x80], [0xe2, 0x82], [0xc3]]

/** `text` with `bad` bytes put right after the opening quote of the name. */
function withBytesInName(text: string, bad: number[]): Buffer {
  const plain = Buffer.from(text)
  const at = plain.indexOf('"name":"') + '"name":"'.length
  return Buffer.concat([plain.subarray(0, at), Buffer.from(bad), plain.subarray(at)])
}

interface EnvelopeBody {
  bytes: Buffer
  verdict: Verdict[]
  sent?: SentPet
}

const envelopeBodyArb: fc.Arbitrary<EnvelopeBody> = fc.oneof(
  {
    weight: 3,
    arbitrary: simplePetArb.map(
      (pet): EnvelopeBody => ({ bytes: Buffer.from(pet.text), verdict: ['ok'], sent: pet.sent }),
    ),
  },
  fc
    .tuple(simplePetArb, fc.constantFrom(...INVALID_UTF8))
    .map(([pet, bad]): EnvelopeBody => ({ bytes: withBytesInName(pet.text, bad), verdict: [400] })),
  // A byte order mark: UTF-8 decoders may drop it; either way nothing else may happen.
  simplePetArb.map(
    (pet): EnvelopeBody => ({
      bytes: Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(pet.text)]),
      verdict: ['ok', 400],
      sent: pet.sent,
    }),
  ),
  simplePetArb.map((pet): EnvelopeBody => ({ bytes: Buffer.from(pet.text, 'utf16le'), verdict: [400] })),
  fc.constant<EnvelopeBody>({ bytes: Buffer.alloc(0), verdict: [400] }),
)

// biome-ignore format: a list of cases
const noiseHeaderArb: fc.Arbitrary<HeaderLine[]> = fc.subarray([['Accept', 'text/html'],
  ['Accept-Encoding', 'gzip, br'], ['Expect', '100-continue'], ['X-Request-Id', '../../etc/passwd'],
  ['X-Forwarded-For', '127.0.0.1'], ['X-HTTP-Method-Override', 'DELETE'], ['Origin', 'https://evil.example'],
] as HeaderLine[])

/** A createPet envelope and the statuses it may get: 201 only if nothing is wrong (or a BOM is in doubt). */
export const envelopeArb = fc
  .record({
    contentType: contentTypeArb,
    encoding: contentEncodingArb,
    body: envelopeBodyArb,
    chunked: fc.boolean(),
    noise: noiseHeaderArb,
  })
  .map(({ contentType, encoding, body, chunked, noise }) => {
    const accepted = [contentType, encoding, body].every(({ verdict }) => verdict.includes('ok'))
    const refusals = [...contentType.verdict, ...encoding.verdict, ...body.verdict].filter((v) => v !== 'ok')
    return {
      headers: [...contentType.lines, ...encoding.lines, ...noise],
      body: body.bytes,
      chunked,
      allowed: [...(accepted ? [201] : []), ...new Set(refusals as number[])],
      sent: accepted ? body.sent : undefined,
    }
  })

interface Credentials {
  lines: HeaderLine[]
  valid: boolean
  refusals: number[]
}

const authorization =
  (valid: boolean, refusals: number[]) =>
  (value: string): Credentials => ({ lines: [['Authorization', value]], valid, refusals })

/**
 * Authorization header lines and whether they must let the request through; refused ones get 401 (or 400
 * when HTTP itself forbids the bytes, as a control character in a header value).
 */
export const credentialsArb: fc.Arbitrary<Credentials> = fc.oneof(
  // biome-ignore format: a list of cases
  { weight: 3, arbitrary: fc.constantFrom('Bearer {KEY}', 'bearer {KEY}', 'BEARER {KEY}', 'Bearer   {KEY}',
    'Bearer {KEY}  ', '  Bearer {KEY}', 'Bearer {KEY}\t').map(authorization(true, [])) },
  // biome-ignore format: a list of cases
  { weight: 4, arbitrary: fc.constantFrom('', 'Bearer', 'Bearer ', 'Bearer\t{KEY}', 'Bearer \t{KEY}',
    'Bearer {KEY} {KEY}', 'Bearer {KEY}x', 'Bearer {KEY},', 'Bearer "{KEY}"', 'Bearer {KEY}=',
    'Bearer {REVOKED}', 'Bearer psk_', 'Token {KEY}', 'Basic {KEY}',
    'Bearer psk_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', 'BearerX {KEY}', 'Bearer: {KEY}', '{KEY}',
    'Bearer {KEY}\u00e9', 'Bearer {KEY}\u200b', 'Bearer \u0130{KEY}', `Bearer ${'A'.repeat(8000)}`)
    .map(authorization(false, [401])) },
  fc.constant('Bearer\u000b{KEY}').map(authorization(false, [400])),
  fc.constant<Credentials>({ lines: [], valid: false, refusals: [401] }),
  // biome-ignore format: a list of cases
  fc.constantFrom(['Bearer {KEY}', 'Bearer {KEY}'], ['Bearer {KEY}', 'Bearer nope'],
    ['Bearer nope', 'Bearer {KEY}'], ['Bearer {KEY}', ''])
    .map(([a = '', b = '']): Credentials => ({
      lines: [['Authorization', a], ['authorization', b]], valid: false, refusals: [401] })),
  // biome-ignore format: a list of cases
  fc.constantFrom<HeaderLine>(['X-Api-Key', '{KEY}'], ['Cookie', 'api_key={KEY}'],
    ['Proxy-Authorization', 'Bearer {KEY}'], ['Authorisation', 'Bearer {KEY}'])
    .map((line): Credentials => ({ lines: [line], valid: false, refusals: [401] })),
)
