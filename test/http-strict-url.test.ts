import assert from 'node:assert/strict'
import { before, describe, test } from 'node:test'
import { call } from './helpers/api-client.ts'
import { engineSuiteOptions, storeEngines } from './helpers/store-engines.ts'
import { startTestServer, suiteCleanup, type TestServer } from './helpers/test-server.ts'

const LIMIT = /"limit" must be an integer from 1 to 100/
// Said whole: `01` and `+1` are in range, so the range alone would not tell what was wrong.
const LITERAL = ', written without a plus sign, leading zeros, a fraction or an exponent'

const badQueries: Array<{ query: string; message: RegExp }> = [
  { query: 'limit=0', message: LIMIT },
  { query: 'limit=101', message: LIMIT },
  { query: 'limit=-1', message: LIMIT },
  { query: 'limit=abc', message: LIMIT },
  { query: 'limit=2.5', message: LIMIT },
  { query: 'limit=1e1', message: LIMIT },
  { query: 'limit=0x10', message: LIMIT },
  { query: 'limit=%2010', message: LIMIT },
  {
    query: 'limit=010',
    message:
      /^query parameter "limit" must be an integer from 1 to 100, written without a plus sign, leading zeros, a fraction or an exponent$/,
  },
  { query: 'limit=', message: LIMIT },
  { query: 'limit=99999999999999999999', message: LIMIT },
  { query: 'limit=1&limit=2', message: /"limit" must be given once/ },
  { query: 'status=bogus', message: /"status" must be one of: available, pending, sold/ },
  { query: 'status=', message: /"status" must be one of/ },
  { query: 'status=sold&status=pending', message: /"status" must be given once/ },
  { query: 'offset=10', message: /"offset" is not allowed \(allowed: limit, status, cursor\)/ },
  { query: 'toString=1&toString=2', message: /"toString" is not allowed/ },
  { query: Array.from({ length: 12 }, (_, i) => `p${i}=1`).join('&'), message: /"p0" is not allowed/ },
  // Of several faults, a parameter given twice is named first, then an unknown one, then a bad value.
  { query: 'offset=1&limit=1&limit=2', message: /"limit" must be given once/ },
  { query: 'limit=abc&offset=1', message: /"offset" is not allowed/ },
]

const badPetIds = [
  'abc',
  '1.5',
  '1e3',
  '0x1F',
  '9223372036854775808',
  '-9223372036854775809',
  '01',
  '+1',
  '-0',
  '%20',
]

for (const engine of storeEngines) {
  describe(`strict URLs (${engine.name})`, engineSuiteOptions(engine), () => {
    let server: TestServer
    const cleanup = suiteCleanup()
    before(async () => {
      server = await startTestServer(cleanup, { engine })
    })

    for (const { query, message } of badQueries) {
      test(`when listPets gets ?${query.slice(0, 40)}, then 400 invalid_query naming the parameter, every time`, async () => {
        // Twice: a repeated query string shares its parsed form, never a verdict it did not earn.
        for (const _ of [1, 2]) {
          const response = await call(server, 'GET', `/v1/pets?${query}`)
          assert.equal(response.status, 400, response.text)
          assert.equal(response.json.code, 'invalid_query')
          assert.match(response.json.message, message)
        }
      })
    }

    for (const petId of badPetIds) {
      test(`when getPet gets petId ${petId}, then 400 invalid_path_parameter`, async () => {
        const response = await call(server, 'GET', `/v1/pets/${petId}`)
        assert.equal(response.status, 400, response.text)
        assert.equal(response.json.code, 'invalid_path_parameter')
        assert.equal(
          response.json.message,
          `path parameter "petId" must be an integer from -9223372036854775808 to 9223372036854775807${LITERAL}`,
        )
      })
    }

    test('when an unknown parameter is named with a bidirectional override, a control character or at great length, then the message shows it escaped and cut, never as it would render', async () => {
      const cases = [
        ['%E2%80%AEtxt.exe=1', '\\u202etxt.exe'],
        ['a%00b=1', 'a\\u0000b'],
        // Beyond the first plane (a private-use character): its code point whole, as JavaScript writes it.
        ['a%F3%B0%80%80b=1', 'a\\u{f0000}b'],
        [`${'x'.repeat(200)}=1`, `${'x'.repeat(64)}…`],
      ] as const
      for (const [query, shown] of cases) {
        const response = await call(server, 'GET', `/v1/pets?${query}`)
        assert.equal(response.status, 400)
        assert.equal(
          response.json.message,
          `query parameter "${shown}" is not allowed (allowed: limit, status, cursor)`,
          query.slice(0, 20),
        )
      }
    })

    test('when createPet or getPet gets any query parameter, then 400 and nothing is created', async () => {
      const before = await call(server, 'GET', '/v1/pets?limit=100')
      for (const query of ['bogus=1', 'limit=5', 'api_key=x&api_key=y', 'status=sold']) {
        const name = query.split('=')[0]
        const created = await call(server, 'POST', `/v1/pets?${query}`, {
          body: { name: 'Rex', categoryId: 1 },
        })
        assert.equal(created.status, 400, created.text)
        assert.equal(created.json.code, 'invalid_query')
        assert.match(created.json.message, new RegExp(`"${name}" is not allowed \\(allowed: none\\)`))
        const fetched = await call(server, 'GET', `/v1/pets/1?${query}`)
        assert.equal(fetched.status, 400, fetched.text)
        assert.equal(fetched.json.code, 'invalid_query')
      }
      assert.equal((await call(server, 'GET', '/v1/pets?limit=100')).text, before.text)
    })

    test('when a query string one operation accepts comes to another, then that one checks it by its own rules', async () => {
      for (const _ of [1, 2]) {
        const listed = await call(server, 'GET', '/v1/pets?limit=3&status=available')
        assert.equal(listed.status, 200, listed.text)
        const fetched = await call(server, 'GET', '/v1/pets/1?limit=3&status=available')
        assert.equal(fetched.status, 400, fetched.text)
        assert.match(fetched.json.message, /"limit" is not allowed \(allowed: none\)/)
      }
    })

    test('when a query string is longer than any the service keeps parsed, then it is checked all the same', async () => {
      const query = `limit=5&${'x'.repeat(600)}=1`
      for (const _ of [1, 2]) {
        const response = await call(server, 'GET', `/v1/pets?${query}`)
        assert.equal(response.status, 400, response.text)
        assert.equal(response.json.code, 'invalid_query')
        assert.match(response.json.message, /^query parameter "x{10,}/)
      }
      const accepted = await call(server, 'GET', `/v1/pets?limit=5&status=sold`)
      assert.equal(accepted.status, 200)
    })

    test('when a cursor has characters no cursor has, then the message states its form in words', async () => {
      const response = await call(server, 'GET', '/v1/pets?cursor=a%2Fb.c')
      assert.equal(response.status, 400)
      assert.equal(
        response.json.message,
        'query parameter "cursor" must be the cursor of a next link, copied unchanged',
      )
    })

    test('when petId is longer than any int64, then 400 invalid_path_parameter naming the rule, up to the 8 KiB a target may have (414 beyond)', async () => {
      const beyond = await call(server, 'GET', `/v1/pets/${'9'.repeat(10_000)}`)
      assert.equal(beyond.status, 414)
      assert.equal(beyond.json.code, 'uri_too_long')
      for (const length of [21, 101, 500, 8000]) {
        const response = await call(server, 'GET', `/v1/pets/${'9'.repeat(length)}`)
        assert.equal(response.status, 400, `${length} digits`)
        assert.equal(response.json.code, 'invalid_path_parameter')
        assert.match(
          response.json.message,
          /must be an integer from -9223372036854775808 to 9223372036854775807/,
        )
      }
    })

    test('when a method getPet does not have is sent with a long petId, then 405 with Allow', async () => {
      const response = await call(server, 'DELETE', `/v1/pets/${'9'.repeat(150)}`)
      assert.equal(response.status, 405)
      assert.equal(response.headers.get('allow'), 'GET, HEAD')
    })
  })
}
