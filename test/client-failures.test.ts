import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { createClient } from '../packages/client/src/index.ts'
import { clientOnServer, rejection } from './helpers/client-on-server.ts'

const INT64_MAX = 9223372036854775807n

describe('typed client: failures', () => {
  test('when the key is wrong, then a PetStoreError carries unauthorized, the status and the response', async (t) => {
    const { client } = await clientOnServer(t, { apiKey: `psk_${'A'.repeat(43)}` })
    const error = await rejection(client.listPets())
    assert.equal(error.code, 'unauthorized')
    assert.equal(error.status, 401)
    assert.equal(error.response.status, 401)
    assert.match(error.response.headers.get('www-authenticate') ?? '', /^Bearer/)
    assert.ok(error instanceof Error && error.message.length > 0)
  })

  test('when getPet asks for an id nobody has, then a PetStoreError carries pet_not_found and 404', async (t) => {
    const { client } = await clientOnServer(t)
    const error = await rejection(client.getPet(INT64_MAX))
    assert.equal(error.code, 'pet_not_found')
    assert.equal(error.status, 404)
  })

  test('when the body breaks the schema, then a PetStoreError carries invalid_body and 400 naming the field', async (t) => {
    const { client } = await clientOnServer(t)
    const error = await rejection(client.createPet({ name: '', categoryId: 1n }))
    assert.equal(error.code, 'invalid_body')
    assert.equal(error.status, 400)
    assert.match(error.message, /name/)
  })

  test('when a call fails, then the PetStoreError carries the request id, and JSON keeps its message', async (t) => {
    const { client } = await clientOnServer(t, { apiKey: 'psk_wrongwrongwrongwrongwrongwrongwrongwrongwro' })
    const error = await rejection(client.listPets())
    assert.match(error.requestId ?? '', /^[\w.:-]{1,128}$/)
    assert.equal(error.requestId, error.response.headers.get('x-request-id'))
    assert.deepEqual(JSON.parse(JSON.stringify(error)), {
      name: 'PetStoreError',
      code: 'unauthorized',
      message: error.message,
      status: 401,
      requestId: error.requestId,
    })
  })

  test('when baseUrl leaves out the API version (/v1), then the 404 route_not_found says to check it', async (t) => {
    const { server } = await clientOnServer(t)
    const client = createClient({ baseUrl: server.origin, apiKey: server.key })
    const error = await rejection(client.listPets())
    assert.equal(error.code, 'route_not_found')
    assert.equal(error.status, 404)
    assert.match(error.message, /^no operation at GET \/pets.*: is baseUrl the API's root, ending in \/v1\?$/)
  })

  test('when a page without an Error body echoes the key, then the message masks it', async () => {
    const client = createClient({
      baseUrl: 'http://127.0.0.1:9/v1',
      apiKey: 'psk_unused',
      fetch: async (_url, init) =>
        new Response(`<pre>${new Headers(init.headers).get('authorization')}</pre>`, { status: 502 }),
    })
    const error = await rejection(client.listPets())
    assert.match(error.message, /Bearer psk_…/)
    assert.doesNotMatch(error.message, /psk_unused/)
  })

  test('when a failure carries no Error body, then the PetStoreError says unexpected_response with the status', async () => {
    const client = createClient({
      baseUrl: 'http://127.0.0.1:9/v1',
      apiKey: 'psk_unused',
      fetch: async () => new Response('<html>Bad Gateway</html>', { status: 502 }),
    })
    const error = await rejection(client.listPets())
    assert.equal(error.code, 'unexpected_response')
    assert.equal(error.status, 502)
    assert.match(error.message, /Bad Gateway/)
  })

  test('when a success status carries a body that is not JSON, then the PetStoreError says unexpected_response', async () => {
    const client = createClient({
      baseUrl: 'http://127.0.0.1:9/v1',
      apiKey: 'psk_unused',
      fetch: async () => new Response('<html>Sign in to the Wi-Fi</html>', { status: 200 }),
    })
    const error = await rejection(client.getPet(1n))
    assert.equal(error.code, 'unexpected_response')
    assert.equal(error.status, 200)
    assert.match(error.message, /Wi-Fi/)
  })

  test("when a success status carries JSON not of the operation's kind (null, a number, a string, a page for a pet, a pet for a page), then the PetStoreError says unexpected_response", async () => {
    for (const text of ['null', '42', '"ok"', '[]', '{}']) {
      const client = createClient({
        baseUrl: 'http://127.0.0.1:9/v1',
        apiKey: 'psk_unused',
        fetch: async () =>
          new Response(text, { status: 200, headers: { 'content-type': 'application/json' } }),
      })
      const calls = {
        object: [() => client.getPet(1n), () => client.createPet({ name: 'Rex', categoryId: 1n })],
        array: [() => client.listPets()],
      }
      // Each call's own kind is what it returns; the tests above show those.
      const wrong =
        text === '[]' ? calls.object : text === '{}' ? calls.array : [...calls.object, ...calls.array]
      for (const call of wrong) {
        const error = await rejection(call())
        assert.equal(error.code, 'unexpected_response', text)
        assert.equal(error.status, 200)
        assert.ok(error.message.endsWith(text), error.message)
        // A success status is not said to lack an Error body: its body is not the operation's answer.
        assert.ok(
          error.message.startsWith("HTTP 200 with a body that is not the API's answer: "),
          error.message,
        )
      }
    }
  })

  test('when a success carries JSON that is no pet (a field missing or of another type, a status the API has not), then the PetStoreError says unexpected_response', async () => {
    const clientAnswering = (text: string) =>
      createClient({
        baseUrl: 'http://127.0.0.1:9/v1',
        apiKey: 'psk_unused',
        fetch: async () =>
          new Response(text, { status: 200, headers: { 'content-type': 'application/json' } }),
      })
    const notPets = [
      '{"name":"x"}',
      '{"id":1,"name":"x","categoryId":"1"}',
      '{"id":"1","name":"x","categoryId":1}',
      '{"id":1,"name":2,"categoryId":1}',
      '{"id":1,"name":"x","categoryId":1,"status":"weird"}',
      '{"id":1.5,"name":"x","categoryId":1}',
    ]
    for (const text of notPets) {
      const client = clientAnswering(text)
      for (const call of [() => client.getPet(1n), () => client.createPet({ name: 'Rex', categoryId: 1n })]) {
        assert.equal((await rejection(call())).code, 'unexpected_response', text)
      }
      assert.equal(
        (await rejection(clientAnswering(`[${text}]`).listPets())).code,
        'unexpected_response',
        text,
      )
    }
    // A field this client does not know is one a later minor version added: taken, as the versioning says.
    const later = await clientAnswering('{"id":1,"name":"x","categoryId":2,"color":"red"}').getPet(1n)
    assert.deepEqual(
      { id: later.id, name: later.name, categoryId: later.categoryId },
      { id: 1n, name: 'x', categoryId: 2n },
    )
    // One holding an object with an `id` of its own, not an int64: kept as sent.
    const nested = await clientAnswering('{"id":1,"name":"x","categoryId":2,"owner":{"id":1.5}}').getPet(1n)
    assert.deepEqual((nested as unknown as { owner: unknown }).owner, { id: 1.5 })
    // An integer a number cannot hold, in a field not known: kept exact, a bigint; a smaller one a number.
    const wide = await clientAnswering(
      '{"id":1,"name":"x","categoryId":2,"ownerId":9007199254740993,"age":3,"weight":2.5}',
    ).getPet(1n)
    const { ownerId, age, weight } = wide as unknown as Record<string, unknown>
    assert.deepEqual({ ownerId, age, weight }, { ownerId: 9007199254740993n, age: 3, weight: 2.5 })
  })
})
