import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { Validator } from '@seriousme/openapi-schema-validator'
import { ERROR_CODES } from '../src/errors.ts'
import { call } from './helpers/api-client.ts'
import { startTestServer } from './helpers/test-server.ts'

describe('OpenAPI document', () => {
  test('when /v1/openapi.json is fetched without a key, then it is a valid OpenAPI 3.1 document', async (t) => {
    const server = await startTestServer(t)
    const response = await call(server, 'GET', '/v1/openapi.json', { key: false })
    assert.equal(response.status, 200)
    const validator = new Validator()
    const result = await validator.validate(response.json)
    assert.equal(result.valid, true, JSON.stringify(result.errors, null, 2))
    assert.equal(validator.version, '3.1')
    // The interface specification's own version: it owns the number (docs/versioning.md, "The API").
    assert.equal(response.json.info.version, '1.0.0')
  })

  test('when read, then it lists the three operations with bearer security and every response schema', async (t) => {
    const server = await startTestServer(t)
    const { json: document } = await call(server, 'GET', '/v1/openapi.json', { key: false })
    assert.deepEqual(document.components.securitySchemes.bearerAuth, {
      type: 'http',
      scheme: 'bearer',
      description: document.components.securitySchemes.bearerAuth.description,
    })
    const operations = Object.entries(document.paths).flatMap(([path, methods]) =>
      Object.entries(
        methods as Record<
          string,
          { operationId: string; security: unknown; responses: Record<string, { content: unknown }> }
        >,
      ).map(([method, operation]) => ({
        path,
        method,
        ...operation,
      })),
    )
    assert.deepEqual(
      operations.map(({ method, path, operationId }) => `${method} ${path} ${operationId}`).sort(),
      ['get /pets listPets', 'get /pets/{petId} getPet', 'post /pets createPet'],
    )
    type Header = { required?: boolean }
    for (const operation of operations as Array<{
      operationId: string
      security: unknown
      responses: Record<string, { content: unknown; headers?: Record<string, Header> }>
    }>) {
      assert.deepEqual(operation.security, [{ bearerAuth: [] }])
      assert.ok(operation.responses['401'])
      for (const [status, response] of Object.entries(operation.responses)) {
        const where = `${operation.operationId} ${status}`
        if (status !== '304') assert.ok(response.content, `${where} has a schema`)
        // Every answer carries its request id, which a 500's message asks the client to quote (the raw
        // socket's too, undocumented: OWASP's rules want CORS headers on any response that lists headers).
        if (!['408', '417', '431'].includes(status))
          assert.equal(response.headers?.['X-Request-Id']?.required, true, `${where}: X-Request-Id`)
      }
      assert.equal(
        operation.responses['503']?.headers?.['Retry-After']?.required,
        true,
        'every 503 says when',
      )
    }
  })

  test('when read, then getPet is deprecated with its removal date and replacement', async (t) => {
    const server = await startTestServer(t)
    const { json: document } = await call(server, 'GET', '/v1/openapi.json', { key: false })
    const getPet = document.paths['/pets/{petId}'].get
    assert.equal(getPet.deprecated, true)
    assert.match(getPet.description, /5 December 2030/)
    assert.match(getPet.description, /GET \/pets.*status/)
    assert.equal(document.paths['/pets'].get.deprecated, undefined)
  })

  test('when read, then int64 fields, limits, the status enum and error codes are documented', async (t) => {
    const server = await startTestServer(t)
    const { json: document } = await call(server, 'GET', '/v1/openapi.json', { key: false })
    const { Pet, NewPet, Error: ErrorSchema } = document.components.schemas
    assert.deepEqual(Pet.required, ['id', 'name', 'categoryId'])
    assert.equal(Pet.properties.id.format, 'int64')
    assert.equal(NewPet.properties.categoryId.format, 'int64')
    // JSON Schema's integer takes 1.0 and -0, which the service refuses: a schema-checking client is told.
    const petId = document.paths['/pets/{petId}'].get.parameters.find(
      (p: { name: string }) => p.name === 'petId',
    )
    for (const int64 of [Pet.properties.id, NewPet.properties.categoryId, petId])
      assert.match(
        int64.description,
        /An integer literal: `1\.0`, `1e2`, `-0` and `01` are not int64 values here/,
      )
    assert.equal(NewPet.properties.name.maxLength, 100)
    assert.equal(NewPet.additionalProperties, false)
    // Response bodies stay open: new response fields are additive in /v1 (docs/versioning.md), and a client
    // that checks answers against the document must not refuse them.
    for (const [name, schema] of Object.entries({ Pet, Error: ErrorSchema }))
      assert.equal(schema.additionalProperties, undefined, `${name} is open to fields added later`)
    assert.deepEqual(document.components.schemas.PetStatus.enum, ['available', 'pending', 'sold'])
    assert.deepEqual(ErrorSchema.required, ['code', 'message', 'status'])
    const limit = document.paths['/pets'].get.parameters.find((p: { name: string }) => p.name === 'limit')
    assert.deepEqual([limit.schema.minimum, limit.schema.maximum, limit.schema.default], [1, 100, 20])
    // The table of codes is the Error schema's description; the introduction stays short (first screen).
    for (const code of Object.keys(ERROR_CODES))
      assert.match(ErrorSchema.description, new RegExp(`\`${code}\``))
    assert.ok(document.info.description.length < 400, 'a short introduction')
  })

  test('when read, then paging, idempotency, conditional GET and deprecation are documented', async (t) => {
    const server = await startTestServer(t)
    const { json: document } = await call(server, 'GET', '/v1/openapi.json', { key: false })
    const list = document.paths['/pets'].get
    const cursor = list.parameters.find((p: { name: string }) => p.name === 'cursor')
    assert.equal(cursor.in, 'query')
    assert.equal(cursor.required, false)
    assert.ok(list.responses['200'].headers.Link)
    assert.equal(list.responses['200'].headers.ETag.required, true)
    assert.ok(list.responses['304'])
    const create = document.paths['/pets'].post
    const idempotencyKey = create.parameters.find((p: { name: string }) => p.name === 'idempotency-key')
    assert.equal(idempotencyKey.in, 'header')
    assert.equal(idempotencyKey.required, false)
    for (const status of ['409', '422']) assert.ok(create.responses[status], status)
    assert.equal(create.responses['201'].headers.Location.required, true)
    const get = document.paths['/pets/{petId}'].get
    for (const header of ['Deprecation', 'Sunset', 'Link'])
      assert.equal(get.responses['200'].headers[header].required, true)
    assert.ok(get.responses['410'])
  })

  test('when a client is generated from it, then every operation declares the x-request-id it may send, and each read with a 304 its if-none-match; sent as declared, they are echoed and answered 304', async (t) => {
    const server = await startTestServer(t)
    const { json: document } = await call(server, 'GET', '/v1/openapi.json', { key: false })
    const headersOf = (operation: { parameters?: Array<{ name: string; in: string; required: boolean }> }) =>
      (operation.parameters ?? []).filter((p) => p.in === 'header' && !p.required).map((p) => p.name)
    assert.deepEqual(headersOf(document.paths['/pets'].get), ['x-request-id', 'if-none-match'])
    assert.deepEqual(headersOf(document.paths['/pets'].post), ['idempotency-key', 'x-request-id'])
    assert.deepEqual(headersOf(document.paths['/pets/{petId}'].get), ['x-request-id', 'if-none-match'])
    const first = await call(server, 'GET', '/v1/pets', { headers: { 'x-request-id': 'client.trace-1' } })
    assert.equal(first.headers.get('x-request-id'), 'client.trace-1')
    const etag = first.headers.get('etag') ?? ''
    const again = await call(server, 'GET', '/v1/pets', { headers: { 'if-none-match': etag } })
    assert.equal(again.status, 304)
  })
})
