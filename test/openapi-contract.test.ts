import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { ERROR_CODES, MESSAGE_MAX_LENGTH } from '../src/errors.ts'
import { call } from './helpers/api-client.ts'
import { startTestServer } from './helpers/test-server.ts'

// What code generators and clients read in the document, checked against what the service does.

interface Operation {
  operationId: string
  parameters?: Array<{
    name: string
    in: string
    schema: { $ref?: string; pattern?: string; maxLength?: number }
  }>
  responses: Record<string, Response>
}
interface Response {
  headers?: Record<string, { required?: boolean }>
  content?: Record<string, { examples?: Record<string, { value: { code: string; status: number } }> }>
}

function operationsOf(document: { paths: Record<string, Record<string, Operation>> }): Operation[] {
  return Object.values(document.paths).flatMap((methods) => Object.values(methods))
}

async function documentOf(t: Parameters<typeof startTestServer>[0]) {
  const server = await startTestServer(t)
  const { json } = await call(server, 'GET', '/v1/openapi.json', { key: false })
  return { server, document: json, operations: operationsOf(json) }
}

describe('OpenAPI document, as generators and clients read it', () => {
  test('when read, then PetStatus is one named schema that every status refers to', async (t) => {
    const { document, operations } = await documentOf(t)
    const { Pet, NewPet } = document.components.schemas
    const ref = { $ref: '#/components/schemas/PetStatus' }
    assert.deepEqual(Pet.properties.status, ref)
    assert.deepEqual(NewPet.properties.status, ref)
    const listPets = operations.find((o) => o.operationId === 'listPets')
    assert.deepEqual(listPets?.parameters?.find((p) => p.name === 'status')?.schema, ref)
    const enums = JSON.stringify(document).match(/"enum":\["available","pending","sold"\]/g) ?? []
    assert.equal(enums.length, 1, 'the statuses are listed once')
  })

  test('when read, then every error response has one example per code, each with its own code and status', async (t) => {
    const { operations } = await documentOf(t)
    for (const operation of operations) {
      for (const [status, response] of Object.entries(operation.responses)) {
        if (Number(status) < 400) continue
        const examples = response.content?.['application/json']?.examples ?? {}
        const where = `${operation.operationId} ${status}`
        assert.ok(Object.keys(examples).length > 0, `${where} has examples`)
        for (const [name, { value }] of Object.entries(examples)) {
          assert.equal(value.code, name, where)
          assert.equal(value.status, Number(status), `${where} ${name}`)
          assert.equal(ERROR_CODES[value.code as keyof typeof ERROR_CODES].status, Number(status), where)
        }
      }
    }
    const byCode = (id: string, status: string) =>
      Object.keys(
        operations.find((o) => o.operationId === id)?.responses[status]?.content?.['application/json']
          ?.examples ?? {},
      )
    assert.deepEqual(byCode('getPet', '404'), ['pet_not_found'])
    assert.deepEqual(byCode('listPets', '401'), ['unauthorized'])
    assert.deepEqual(byCode('listPets', '429'), ['rate_limited'])
  })

  test('when read, then the RateLimit fields are on every response counted against a key, and required on 429', async (t) => {
    const { operations } = await documentOf(t)
    const fields = ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset']
    for (const operation of operations) {
      for (const [status, response] of Object.entries(operation.responses)) {
        const where = `${operation.operationId} ${status}`
        // Refused before the request is counted: no key (401), gone (410), a target too long (414), or the
        // HTTP layer (408, 417, 431).
        const counted = !['401', '408', '410', '414', '417', '431'].includes(status)
        for (const field of fields) {
          const header = response.headers?.[field]
          assert.equal(header !== undefined, counted, `${where} ${field}`)
          if (header) assert.equal(header.required === true, status === '429', `${where} ${field} required`)
        }
      }
    }
  })

  test('when a pet is read, created or refused after the key is counted, then the answer carries the RateLimit fields', async (t) => {
    const { server } = await documentOf(t)
    // Each call is also checked against the document: the fields sent must be documented for that answer.
    const answers = [
      await call(server, 'POST', '/v1/pets', { body: { name: 'Rex', categoryId: 1 } }),
      await call(server, 'GET', '/v1/pets'),
      await call(server, 'GET', '/v1/pets/1'),
      await call(server, 'GET', '/v1/pets/999'),
      await call(server, 'POST', '/v1/pets', { body: { name: 'Rex' } }),
    ]
    assert.deepEqual(
      answers.map((answer) => [answer.status, answer.headers.get('ratelimit-remaining') !== null]),
      [201, 200, 200, 404, 400].map((status) => [status, true]),
    )
  })

  test('when Idempotency-Key values are sent, then the service accepts exactly those the documented pattern matches', async (t) => {
    const { server, operations } = await documentOf(t)
    const createPet = operations.find((o) => o.operationId === 'createPet')
    const parameter = createPet?.parameters?.find((p) => p.name === 'idempotency-key')
    assert.equal(parameter?.in, 'header')
    const { pattern = '', maxLength } = parameter?.schema ?? {}
    assert.equal(maxLength, 512)
    const keys = [
      'k',
      'x'.repeat(255),
      'x'.repeat(256),
      '"quoted key"',
      '"a\\"b"',
      '"a"b"',
      '"',
      'two words',
      '"x',
    ]
    for (const [index, key] of keys.entries()) {
      const documented = new RegExp(pattern, 'u').test(key)
      const response = await call(server, 'POST', '/v1/pets', {
        body: { name: `Pet ${index}`, categoryId: 1 },
        headers: { 'idempotency-key': key },
      })
      assert.equal(response.status, documented ? 201 : 400, key)
      if (!documented) assert.equal(response.json.code, 'invalid_idempotency_key', key)
    }
  })

  test('when a refusal would echo a huge field name or Content-Type parameter, then it shows its first 64 characters, within the documented length', async (t) => {
    const { server, document } = await documentOf(t)
    assert.equal(document.components.schemas.Error.properties.message.maxLength, MESSAGE_MAX_LENGTH)
    const field = await call(server, 'POST', '/v1/pets', { body: { ['x'.repeat(3000)]: 1 } })
    assert.equal(field.status, 400)
    assert.equal(field.json.code, 'invalid_body')
    assert.equal(
      field.json.message,
      `body field "${'x'.repeat(64)}…" is not allowed (allowed: name, categoryId, status)`,
    )
    const name = 'p'.repeat(3000)
    const parameter = await call(server, 'POST', '/v1/pets', {
      body: { name: 'Rex', categoryId: 1 },
      headers: { 'content-type': `application/json; ${name}=1; ${name}=2` },
    })
    assert.equal(parameter.status, 400)
    assert.equal(parameter.json.message, `"${'p'.repeat(64)}…" is given more than once in Content-Type`)
  })

  test('when the document is read as JSON or YAML, from the API or the docs page, then int64 bounds are exact', async (t) => {
    const { server } = await documentOf(t)
    for (const path of ['/v1/openapi.json', '/docs/json', '/docs/yaml']) {
      const text = await (await fetch(`${server.origin}${path}`)).text()
      assert.match(text, /"?maximum"?: ?9223372036854775807\b/, path)
      assert.match(text, /"?minimum"?: ?-9223372036854775808\b/, path)
      assert.doesNotMatch(text, /922337203685477\d*e|(?<!-)9223372036854775808\b/, path)
    }
  })
})
