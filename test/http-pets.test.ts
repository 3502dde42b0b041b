import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { call } from './helpers/api-client.ts'
import { engineSuiteOptions, storeEngines } from './helpers/store-engines.ts'
import { startTestServer } from './helpers/test-server.ts'

for (const engine of storeEngines) {
  describe(engine.name, engineSuiteOptions(engine), () => {
    describe('createPet', () => {
      test('when a valid pet is posted, then 201 returns it with a new id and a Location that serves it', async (t) => {
        const server = await startTestServer(t, { engine })
        const created = await call(server, 'POST', '/v1/pets', {
          body: { name: 'Rex', categoryId: 3, status: 'available' },
        })
        assert.equal(created.status, 201)
        assert.deepEqual(Object.keys(created.json).sort(), ['categoryId', 'id', 'name', 'status'])
        assert.equal(created.json.name, 'Rex')
        assert.equal(created.json.status, 'available')
        // No PUBLIC_BASE_URL and PORT=0: the Location is relative, resolved against the request URL.
        assert.equal(created.headers.get('location'), `/v1/pets/${created.json.id}`)
        const location = new URL(created.headers.get('location') ?? '', `${server.origin}/v1/pets`)

        const fetched = await call(server, 'GET', location.pathname)
        assert.equal(fetched.status, 200)
        assert.equal(fetched.text, created.text)
      })

      test('when status is absent, then it stays absent (no default is invented)', async (t) => {
        const server = await startTestServer(t, { engine })
        const created = await call(server, 'POST', '/v1/pets', { body: { name: 'Tom', categoryId: 1 } })
        assert.equal(created.status, 201)
        assert.equal('status' in created.json, false)
        const fetched = await call(server, 'GET', `/v1/pets/${created.json.id}`)
        assert.equal('status' in fetched.json, false)
        const listed = await call(server, 'GET', '/v1/pets')
        assert.equal('status' in listed.json[0], false)
      })

      test('when the Location base is configured, then Location uses PUBLIC_BASE_URL', async (t) => {
        const server = await startTestServer(t, {
          engine,
          env: { PUBLIC_BASE_URL: 'https://pets.example.org/api/v1' },
        })
        const created = await call(server, 'POST', '/v1/pets', { body: { name: 'Rex', categoryId: 3 } })
        assert.equal(
          created.headers.get('location'),
          `https://pets.example.org/api/v1/pets/${created.json.id}`,
        )
      })

      test('when the name is 100 characters of astral symbols, then it is accepted and stored exactly', async (t) => {
        const server = await startTestServer(t, { engine })
        const name = '🐈'.repeat(100)
        const created = await call(server, 'POST', '/v1/pets', { body: { name: `${name}`, categoryId: 1 } })
        assert.equal(created.status, 201)
        const fetched = await call(server, 'GET', `/v1/pets/${created.json.id}`)
        assert.equal(fetched.json.name, name)
      })

      test('when names carry leading spaces, quotes and unicode, then they are stored byte for byte', async (t) => {
        const server = await startTestServer(t, { engine })
        for (const name of ['  Rex  ', 'Zoë "the cat"', 'ß\u00a0\u200b名前', '\\ / <script>']) {
          const created = await call(server, 'POST', '/v1/pets', { body: { name, categoryId: 1 } })
          assert.equal(created.status, 201, name)
          const fetched = await call(server, 'GET', `/v1/pets/${created.json.id}`)
          assert.equal(fetched.json.name, name)
        }
      })

      test('when 200 creates run concurrently, then 200 distinct ids are returned and each one is retrievable', async (t) => {
        const server = await startTestServer(t, { engine })
        const responses = await Promise.all(
          Array.from({ length: 200 }, (_, i) =>
            call(server, 'POST', '/v1/pets', { body: { name: `pet ${i}`, categoryId: i } }),
          ),
        )
        assert.ok(responses.every((response) => response.status === 201))
        const ids = new Set(responses.map((response) => response.json.id))
        assert.equal(ids.size, 200)
        for (const response of responses) {
          const fetched = await call(server, 'GET', `/v1/pets/${response.json.id}`)
          assert.equal(fetched.text, response.text)
        }
      })
    })

    describe('int64 values', () => {
      const edges = [
        '-9223372036854775808',
        '-9007199254740993',
        '-1',
        '0',
        '9007199254740991',
        '9007199254740992',
        '9007199254740993',
        '9223372036854775806',
        '9223372036854775807',
      ]

      for (const edge of edges) {
        test(`when categoryId is ${edge}, then it round-trips exactly through create, get and list`, async (t) => {
          const server = await startTestServer(t, { engine })
          const created = await call(server, 'POST', '/v1/pets', {
            body: `{"name":"Edge","categoryId":${edge}}`,
          })
          assert.equal(created.status, 201)
          assert.match(created.text, new RegExp(`"categoryId":${edge}[,}]`))
          const id = /"id":(\d+)/.exec(created.text)?.[1]
          const fetched = await call(server, 'GET', `/v1/pets/${id}`)
          assert.match(fetched.text, new RegExp(`"categoryId":${edge}[,}]`))
          const listed = await call(server, 'GET', '/v1/pets')
          assert.match(listed.text, new RegExp(`"categoryId":${edge}[,}]`))
        })
      }

      test('when petId is an int64 edge with no pet, then 404 (not 400)', async (t) => {
        const server = await startTestServer(t, { engine })
        for (const id of ['9223372036854775807', '-9223372036854775808', '0', '9007199254740993']) {
          const response = await call(server, 'GET', `/v1/pets/${id}`)
          assert.equal(response.status, 404, id)
          assert.equal(response.json.code, 'pet_not_found')
          assert.match(response.json.message, new RegExp(id))
        }
      })
    })

    describe('listPets', () => {
      async function seed(server: Awaited<ReturnType<typeof startTestServer>>, count: number) {
        const statuses = ['available', 'pending', 'sold', undefined]
        const created = []
        for (let i = 0; i < count; i++) {
          const status = statuses[i % statuses.length]
          const body = { name: `pet ${i}`, categoryId: i, ...(status ? { status } : {}) }
          created.push((await call(server, 'POST', '/v1/pets', { body })).json)
        }
        return created
      }

      test('when the catalogue is empty, then the list is an empty array', async (t) => {
        const server = await startTestServer(t, { engine })
        const response = await call(server, 'GET', '/v1/pets')
        assert.equal(response.status, 200)
        assert.equal(response.text, '[]')
      })

      test('when no limit is given, then the first 20 pets come back in ascending id order', async (t) => {
        const server = await startTestServer(t, { engine })
        const created = await seed(server, 25)
        const response = await call(server, 'GET', '/v1/pets')
        assert.equal(response.json.length, 20)
        assert.deepEqual(
          response.json.map((pet: { id: number }) => pet.id),
          created.slice(0, 20).map((pet) => pet.id),
        )
      })

      test('when limit is 1 or 100, then at most that many pets come back', async (t) => {
        const server = await startTestServer(t, { engine })
        await seed(server, 105)
        assert.equal((await call(server, 'GET', '/v1/pets?limit=1')).json.length, 1)
        assert.equal((await call(server, 'GET', '/v1/pets?limit=100')).json.length, 100)
      })

      test('when status is given, then only pets with that status come back, in id order', async (t) => {
        const server = await startTestServer(t, { engine })
        const created = await seed(server, 12)
        for (const status of ['available', 'pending', 'sold']) {
          const response = await call(server, 'GET', `/v1/pets?status=${status}&limit=100`)
          const expected = created.filter((pet) => pet.status === status).map((pet) => pet.id)
          assert.deepEqual(
            response.json.map((pet: { id: number }) => pet.id),
            expected,
          )
          assert.ok(expected.length > 0)
        }
      })

      test('when the same list is asked twice, then the answers are identical', async (t) => {
        const server = await startTestServer(t, { engine })
        await seed(server, 30)
        const first = await call(server, 'GET', '/v1/pets?limit=50')
        const second = await call(server, 'GET', '/v1/pets?limit=50')
        assert.equal(first.text, second.text)
      })
      test('when a pet is created after a list was read, then the same list read again shows it', async (t) => {
        const server = await startTestServer(t, { engine })
        await seed(server, 3)
        const queries = ['/v1/pets', '/v1/pets?status=available', '/v1/pets?limit=100']
        const before = await Promise.all(
          queries.map(async (query) => (await call(server, 'GET', query)).json),
        )
        const { json: added } = await call(server, 'POST', '/v1/pets', {
          body: { name: 'Late', categoryId: 1, status: 'available' },
        })
        for (const [index, query] of queries.entries()) {
          const after = (await call(server, 'GET', query)).json
          assert.deepEqual(after, [...(before[index] ?? []), added], query)
        }
      })
    })

    describe('getPet', () => {
      test('when the pet exists, then 200; when it does not, then 404 with the Error body', async (t) => {
        const server = await startTestServer(t, { engine })
        const created = await call(server, 'POST', '/v1/pets', { body: { name: 'Rex', categoryId: 1 } })
        assert.equal((await call(server, 'GET', `/v1/pets/${created.json.id}`)).status, 200)
        const missing = await call(server, 'GET', `/v1/pets/${created.json.id + 1}`)
        assert.equal(missing.status, 404)
        assert.deepEqual(missing.json, {
          code: 'pet_not_found',
          message: `no pet has id ${created.json.id + 1}`,
          status: 404,
        })
      })

      test('when HEAD is used on a pet, then it answers like GET without a body', async (t) => {
        const server = await startTestServer(t, { engine })
        const created = await call(server, 'POST', '/v1/pets', { body: { name: 'Rex', categoryId: 1 } })
        const head = await call(server, 'HEAD', `/v1/pets/${created.json.id}`)
        assert.equal(head.status, 200)
        assert.equal(head.text, '')
      })
    })
  })
}
