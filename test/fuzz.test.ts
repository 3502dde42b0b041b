import assert from 'node:assert/strict'
import { before, describe, test } from 'node:test'
import fc from 'fast-check'
import { credentialsArb, envelopeArb, type HeaderLine, notAPetBodyArb } from './helpers/fuzz-envelopes.ts'
import { type PetBody, petBodyArb, rarely, simplePetArb } from './helpers/fuzz-json.ts'
import { assertEchoed, FuzzTarget } from './helpers/fuzz-target.ts'
import {
  isPetId,
  type KnownCursor,
  listQueryOf,
  oddTargetArb,
  petIdSegmentArb,
  queryPartArb,
} from './helpers/fuzz-urls.ts'
import {
  engineSuiteOptions,
  postgresEngine,
  type StoreEngine,
  sqliteEngine,
} from './helpers/store-engines.ts'
import { startTestServer, suiteCleanup } from './helpers/test-server.ts'

// Property-based fuzzing of the three operations over a real socket, checked against README's strictness
// rules, limits and error codes, and against the OpenAPI document (fuzz-target.ts lists what holds for every
// answer). FUZZ_RUNS sets how many requests are generated on SQLite (default 2,400, the CI run; PostgreSQL
// gets a quarter); FUZZ_SEED replays a run. The seed is printed with every run and with every failure.
const RUNS = Number(process.env.FUZZ_RUNS ?? 2400)
const SEED =
  process.env.FUZZ_SEED === undefined
    ? (Date.now() ^ (Math.random() * 2 ** 31)) | 0
    : Number(process.env.FUZZ_SEED)
const BODY_LIMIT = 4096
const auth: HeaderLine = ['Authorization', 'Bearer {KEY}']
const json: HeaderLine = ['Content-Type', 'application/json']

/** Runs a property `numRuns` times; a failure reports the seed, the counterexample, its path, the error. */
async function holds<T>(
  name: string,
  numRuns: number,
  arbitrary: fc.Arbitrary<T>,
  check: (value: T) => Promise<void>,
) {
  const details = await fc.check(fc.asyncProperty(arbitrary, check), { numRuns, seed: SEED })
  if (!details.failed) return
  const error = details.errorInstance
  throw new Error(
    `${name} failed — replay with FUZZ_SEED=${details.seed} (path ${details.counterexamplePath})\n` +
      `${fc.defaultReportMessage(details)}\nGot: ${error instanceof Error ? error.message : String(error)}`,
    { cause: error },
  )
}

/** The whole fuzzing suite on one engine, `runs` generated requests in all. */
function fuzzSuite(engine: StoreEngine, runs: number) {
  let target: FuzzTarget
  let cursors: KnownCursor[]
  const cleanup = suiteCleanup()
  const runsFor = (share: number) => Math.max(1, Math.round(runs * share))
  const existingId = (index: number) => String(target.pets[index % target.pets.length]?.id)
  // Answers per property and status, printed at the end: a property that never reaches a case proves nothing.
  const outcomes = new Map<string, number>()
  const count = (property: string, status: number) =>
    outcomes.set(`${property} ${status}`, (outcomes.get(`${property} ${status}`) ?? 0) + 1)

  before(async () => {
    // No rate limit and no load shedding: the properties are about input, not about load.
    const env = { RATE_LIMIT_PER_MINUTE: '0', MAX_EVENT_LOOP_DELAY_MS: '0' }
    target = await FuzzTarget.on(await startTestServer(cleanup, { engine, env }))
    console.log(`fuzz (${engine.name}): FUZZ_SEED=${SEED}, ${runs} generated requests`)
    cursors = await target.seed()
  })

  test('when createPet gets generated and adversarial bodies, then valid ones are stored exactly as sent and every other one is refused, changing nothing', async () => {
    const bodies = fc.oneof({ weight: 3, arbitrary: petBodyArb }, notAPetBodyArb)
    await holds(
      'createPet bodies',
      runsFor(0.35),
      fc.tuple(bodies, fc.boolean()),
      async ([body, chunked]) => {
        const bytes = Buffer.from(body.text)
        const request = { method: 'POST', target: '/v1/pets', headers: [auth, json], body: bytes, chunked }
        const { reply, created } = await target.send(request)
        const what = `${body.text.slice(0, 200)} → ${reply.status} ${reply.text.slice(0, 200)}`
        count('bodies', reply.status)
        if (bytes.length > BODY_LIMIT) return assert.equal(reply.status, 413, what)
        if (body.verdict === 'invalid') return assert.equal(reply.status, 400, what)
        assert.equal(reply.status, 201, what)
        assertEchoed(created, body.sent as NonNullable<PetBody['sent']>, what)
      },
    )
  })

  test('when createPet gets odd content types, charsets, encodings, framing and invalid UTF-8, then only a clean JSON body is accepted', async () => {
    await holds('createPet envelopes', runsFor(0.15), envelopeArb, async (envelope) => {
      const { headers, body, chunked } = envelope
      const { reply, created } = await target.send({
        method: 'POST',
        target: '/v1/pets',
        headers: [auth, ...headers],
        body,
        chunked,
      })
      const what = `${JSON.stringify(headers)} → ${reply.status} ${reply.text.slice(0, 200)}`
      count('envelopes', reply.status)
      assert.ok(envelope.allowed.includes(reply.status), `${what}: expected one of ${envelope.allowed}`)
      if (reply.status === 201)
        assertEchoed(created, envelope.sent as NonNullable<typeof envelope.sent>, what)
    })
  })

  test('when any operation gets malformed, revoked, repeated or misplaced credentials, then 401 and nothing happens', async () => {
    const operations = fc.constantFrom('listPets', 'headPets', 'createPet', 'getPet')
    const keyInQuery = rarely(fc.constantFrom('api_key', 'access_token', 'key', 'token'), 3)
    const cases = fc.tuple(operations, credentialsArb, keyInQuery, simplePetArb, fc.nat())
    await holds(
      'credentials',
      runsFor(0.15),
      cases,
      async ([operation, credentials, queryKey, pet, index]) => {
        const query = queryKey === null ? '' : `?${queryKey}={KEY}`
        const path = operation === 'getPet' ? `/v1/pets/${existingId(index)}` : '/v1/pets'
        const method = { listPets: 'GET', headPets: 'HEAD', createPet: 'POST', getPet: 'GET' }[operation]
        const { reply, created } = await target.send({
          method,
          target: `${path}${query}`,
          headers: [...credentials.lines, ...(method === 'POST' ? [json] : [])],
          ...(method === 'POST' ? { body: pet.text } : {}),
        })
        const what = `${operation} ${JSON.stringify(credentials.lines)}${query} → ${reply.status}`
        count('credentials', reply.status)
        if (!credentials.valid) {
          assert.ok(credentials.refusals.includes(reply.status), `${what}: expected ${credentials.refusals}`)
          if (reply.status === 401)
            assert.match(reply.headers.get('www-authenticate') ?? '', /^Bearer realm="petstore"/, what)
          return
        }
        if (query !== '')
          return assert.equal(reply.status, 400, `${what}: a key in the query is an unknown parameter`)
        assert.equal(
          reply.status,
          { listPets: 200, headPets: 200, createPet: 201, getPet: 200 }[operation],
          what,
        )
        if (created) assertEchoed(created, pet.sent, what)
      },
    )
  })

  test('when listPets gets generated query strings, then valid ones return exactly the matching page and all others 400 invalid_query', async () => {
    const cases = fc.tuple(
      fc.array(queryPartArb, { maxLength: 4 }),
      fc.constantFrom('', '&', '&&'),
      fc.constantFrom('GET', 'HEAD'),
    )
    await holds('listPets queries', runsFor(0.15), cases, async ([given, glue, method]) => {
      const parts = given.map((part) => {
        const index = /^\{CURSOR(\d)\}$/.exec(part.value)?.[1]
        const cursor = index === undefined ? undefined : (cursors[Number(index)]?.cursor ?? '')
        return cursor === undefined
          ? part
          : { ...part, raw: part.raw.replace(part.value, cursor), value: cursor }
      })
      const raw = parts.map((part) => part.raw).join(`&${glue}`)
      const { reply } = await target.send({
        method,
        target: `/v1/pets${raw ? `?${raw}` : ''}`,
        headers: [auth],
      })
      const what = `?${raw} → ${reply.status} ${reply.text.slice(0, 200)}`
      count('queries', reply.status)
      // A malformed percent-encoding is a malformed URL, refused before the query is read.
      if (!decodes(raw)) {
        assert.equal(reply.status, 400, what)
        if (method === 'GET') assert.equal(JSON.parse(reply.text).code, 'bad_request', what)
        return
      }
      const query = listQueryOf(parts, cursors)
      if (query === undefined) {
        assert.equal(reply.status, 400, what)
        if (method === 'GET') assert.equal(JSON.parse(reply.text).code, 'invalid_query', what)
        return
      }
      assert.equal(reply.status, 200, what)
      const expected = target.expectedPage(query)
      assert.equal(/rel="next"/.test(reply.headers.get('link') ?? ''), expected.more, `${what}: next link`)
      if (method === 'HEAD') return
      // Compared on the raw text: ids and categoryIds must keep every digit.
      const ids = [...reply.text.matchAll(/"id":(-?\d+)/g)].map((match) => match[1])
      const categories = [...reply.text.matchAll(/"categoryId":(-?\d+)/g)].map((match) => match[1])
      assert.deepEqual(
        ids,
        expected.page.map((pet) => String(pet.id)),
        what,
      )
      assert.deepEqual(
        categories,
        expected.page.map((pet) => String(pet.categoryId)),
        what,
      )
      assert.deepEqual(
        JSON.parse(reply.text).map((pet: { name: string }) => pet.name),
        expected.page.map((pet) => pet.name),
      )
    })
  })

  test('when getPet gets generated path segments, then int64 ids are found or 404, everything else 400, always with the deprecation headers', async () => {
    const cases = fc.tuple(petIdSegmentArb, fc.nat(), fc.constantFrom('GET', 'HEAD'))
    await holds('getPet paths', runsFor(0.12), cases, async ([segment, index, method]) => {
      const raw = segment.raw.replace('{EXISTING}', existingId(index))
      const decoded = segment.decoded.replace('{EXISTING}', existingId(index))
      const { reply } = await target.send({ method, target: `/v1/pets/${raw}`, headers: [auth] })
      const what = `/v1/pets/${raw} → ${reply.status} ${reply.text.slice(0, 200)}`
      count('paths', reply.status)
      assert.match(reply.headers.get('deprecation') ?? '', /^@\d+$/, `${what}: Deprecation`)
      assert.equal(reply.headers.get('sunset'), 'Thu, 05 Dec 2030 00:00:00 GMT', `${what}: Sunset`)
      if (!isPetId(raw, decoded)) return assert.equal(reply.status, 400, what)
      const pet = target.pets.find((known) => known.id === BigInt(decoded))
      assert.equal(reply.status, pet ? 200 : 404, what)
      if (pet && method === 'GET') {
        const exact = new RegExp(`^\\{"id":${pet.id},.*"categoryId":${pet.categoryId}[,}]`, 's')
        assert.match(reply.text, exact, what)
      }
    })
  })

  test('when any method is sent to any target with any headers and body, then the answer is never a 5xx and always conforms', async () => {
    // biome-ignore format: a list of cases
    const methods = fc.constantFrom('GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'TRACE',
      'QUERY', 'get', 'FOO', 'PROPFIND')
    const targets = fc.oneof(
      oddTargetArb,
      fc.constantFrom(
        '/v1/pets',
        '/v1/pets/{EXISTING}',
        '/healthz',
        '/readyz',
        '/v1/openapi.json',
        '/docs',
        '/metrics',
        '/',
      ),
      fc
        .string({ unit: fc.constantFrom(..."/v1pets?&=%.-_~:@!$'()*+,;0123456789abcAZ"), maxLength: 40 })
        .map((s) => `/${s}`),
    )
    const bodies = fc.option(
      fc.oneof(
        simplePetArb.map((pet) => pet.text),
        fc.string({ maxLength: 200 }),
      ),
    )
    // biome-ignore format: a list of cases
    const headers = fc.subarray([auth, json, ['Authorization', 'Bearer nope'], ['Idempotency-Key', '{KEY}'],
      ['Expect', '100-continue'], ['Expect', 'teapot'], ['Transfer-Encoding', 'gzip'], ['Accept', '*/*']] as HeaderLine[])
    const cases = fc.tuple(methods, targets, headers, bodies, fc.nat())
    await holds('any request', runsFor(0.08), cases, async ([method, raw, lines, body, index]) => {
      const request = { method, target: raw.replace('{EXISTING}', existingId(index)), headers: lines }
      const { reply } = await target.send({ ...request, ...(body === null ? {} : { body }) })
      count('any', reply.status)
    })
  })

  test('when the fuzzing is done, then the store holds exactly the accepted creates and enough requests were sent', async (t) => {
    await target.checkCatalogue()
    t.diagnostic(`${target.requests} requests, ${target.pets.length} pets created, FUZZ_SEED=${SEED}`)
    console.log(`fuzz (${engine.name}): ${target.requests} requests sent, ${target.pets.length} pets created`)
    console.log(`fuzz (${engine.name}): answers ${JSON.stringify(Object.fromEntries([...outcomes].sort()))}`)
    assert.ok(target.requests >= runs, `${target.requests} requests`)
  })
}

// A whole suite takes about 2 ms per request here; the bound scales with FUZZ_RUNS, so `npm run fuzz`
// (which has no per-test default) is bounded too.
const timeout = 60_000 + RUNS * 20
/** Whether `text` holds only well-formed percent-encodings. */
function decodes(text: string): boolean {
  try {
    decodeURIComponent(text)
    return true
  } catch {
    return false
  }
}

describe('fuzzing the three operations (sqlite)', { timeout }, () => fuzzSuite(sqliteEngine, RUNS))
// PostgreSQL stores what SQLite stores, through another driver and type parser: a quarter of the runs.
describe('fuzzing the three operations (postgres)', { ...engineSuiteOptions(postgresEngine), timeout }, () =>
  fuzzSuite(postgresEngine, Math.round(RUNS / 4)),
)
