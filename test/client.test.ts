import assert from 'node:assert/strict'
import { createHook } from 'node:async_hooks'
import { describe, test } from 'node:test'
import { createClient, DEFAULT_TIMEOUT_MS } from '../packages/client/src/index.ts'
import { clientOnServer, rejection } from './helpers/client-on-server.ts'
import { silentListener } from './helpers/silent-listener.ts'
import { startTestServer } from './helpers/test-server.ts'

const INT64_MAX = 9223372036854775807n
const INT64_MIN = -9223372036854775808n
const ABOVE_DOUBLES = 9007199254740993n // 2^53 + 1: the first integer a double cannot hold

/** A client whose fetch only counts the calls that reach it. */
function clientCountingSends() {
  let sent = 0
  const client = createClient({
    baseUrl: 'http://127.0.0.1:9/v1',
    apiKey: 'psk_unused',
    fetch: async () => {
      sent++
      return new Response('{}', { status: 201 })
    },
  })
  return { client, sent: () => sent }
}

describe('typed client', () => {
  test('when a pet is created, then it comes back with a bigint id and getPet returns it', async (t) => {
    const { server, client, seen } = await clientOnServer(t)
    const created = await client.createPet({ name: 'Rex', categoryId: 1n, status: 'available' })
    assert.equal(typeof created.id, 'bigint')
    assert.deepEqual(created, { id: created.id, name: 'Rex', categoryId: 1n, status: 'available' })
    assert.deepEqual(await client.getPet(created.id), created)
    assert.ok(seen.every((request) => request.headers.get('authorization') === `Bearer ${server.key}`))
    assert.equal(seen[0]?.headers.get('idempotency-key'), null)
  })

  test('when a create is retried with the same idempotency key, then the first pet comes back and no other is made', async (t) => {
    const { client, seen } = await clientOnServer(t)
    const pet = { name: 'Tom', categoryId: 2n }
    const first = await client.createPet(pet, { idempotencyKey: 'order-1' })
    const retry = await client.createPet(pet, { idempotencyKey: 'order-1' })
    assert.deepEqual(retry, first)
    assert.equal(seen[1]?.headers.get('idempotency-key'), 'order-1')
    assert.deepEqual((await client.listPets()).pets, [first])
    const reused = await rejection(
      client.createPet({ name: 'Other', categoryId: 2n }, { idempotencyKey: 'order-1' }),
    )
    assert.equal(reused.code, 'idempotency_key_reused')
    assert.equal(reused.status, 422)
  })

  test('when int64 values sit at the edges of the range, then they round-trip exactly as bigint', async (t) => {
    const { client } = await clientOnServer(t)
    for (const categoryId of [INT64_MAX, INT64_MIN, ABOVE_DOUBLES, -ABOVE_DOUBLES]) {
      const created = await client.createPet({ name: 'Edge', categoryId })
      assert.equal(created.categoryId, categoryId)
      assert.equal((await client.getPet(created.id)).categoryId, categoryId)
    }
    const listed = (await client.listPets()).pets.map((pet) => pet.categoryId)
    assert.deepEqual(listed, [INT64_MAX, INT64_MIN, ABOVE_DOUBLES, -ABOVE_DOUBLES])
  })

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

  test('when the service never answers, then the call is aborted at the timeout, or when its own signal aborts', async (t) => {
    // Accepts connections and never answers: a hung service, or a proxy holding the call.
    const { port } = await silentListener(t)
    const options = { baseUrl: `http://127.0.0.1:${port}/v1`, apiKey: 'psk_unused' }
    const timed = createClient({ ...options, timeoutMs: 200 })
    const started = performance.now()
    await assert.rejects(timed.listPets(), { name: 'TimeoutError' })
    assert.ok(performance.now() - started < 5000, 'aborted near its timeout')
    const untimed = createClient({ ...options, timeoutMs: 0 })
    const controller = new AbortController()
    const call = untimed.getPet(1n, { signal: controller.signal })
    setTimeout(() => controller.abort(new Error('the caller gave up')), 100)
    await assert.rejects(call, { message: 'the caller gave up' })
    await assert.rejects(
      timed.createPet({ name: 'Rex', categoryId: 1n }, { idempotencyKey: 'k', signal: AbortSignal.abort() }),
      { name: 'AbortError' },
    )
    // A caller's own signal that never aborts leaves the client's time limit in force.
    await assert.rejects(timed.listPets({}, { signal: new AbortController().signal }), {
      name: 'TimeoutError',
    })
  })

  test('when no timeoutMs is given, then every call still carries a time limit (30 s)', async () => {
    const signals: Array<AbortSignal | null | undefined> = []
    const client = createClient({
      baseUrl: 'http://127.0.0.1:9/v1',
      apiKey: 'psk_unused',
      fetch: async (_url, init) => {
        signals.push(init.signal)
        return new Response('[]', { headers: { 'content-type': 'application/json' } })
      },
    })
    await client.listPets()
    assert.ok(signals[0] instanceof AbortSignal, 'a signal is given to fetch')
    assert.equal(DEFAULT_TIMEOUT_MS, 30_000)
  })

  test('when a call has ended (answered, refused, or its body refused), then its time limit holds no timer: one per call, alive for timeoutMs, held about 0.5 KB each at thousands of calls a second', async () => {
    const answers = [
      () => new Response('[]', { headers: { 'content-type': 'application/json' } }),
      () => new Response('{"code":"pet_not_found","message":"no pet","status":404}', { status: 404 }),
      () => new Response('not json'),
    ]
    let next = 0
    const client = createClient({
      baseUrl: 'http://127.0.0.1:9/v1',
      apiKey: 'psk_unused',
      fetch: async () => (answers[next++ % answers.length] as () => Response)(),
    })
    const live = new Set<number>()
    const timers = createHook({
      init: (id, type) => type === 'Timeout' && live.add(id),
      destroy: (id) => live.delete(id),
    }).enable()
    try {
      for (let call = 0; call < 30; call++) {
        await client.listPets({}, { signal: new AbortController().signal }).catch(() => {})
      }
      await new Promise(setImmediate)
    } finally {
      timers.disable()
    }
    assert.equal(live.size, 0, `${live.size} timers outlived their calls`)
  })

  test('when a fetch wrapper sends a call again (a retry), then the second sending works', async (t) => {
    const server = await startTestServer(t)
    let sent = 0
    const client = createClient({
      baseUrl: `${server.origin}/v1`,
      apiKey: server.key,
      fetch: async (url, init) => {
        const first = await fetch(url, init)
        await first.text()
        sent++
        return fetch(url, init)
      },
    })
    const pet = await client.createPet({ name: 'Twice', categoryId: 1n }, { idempotencyKey: 'retried' })
    assert.equal(pet.name, 'Twice')
    assert.equal(sent, 1)
  })

  test('when a fetch wrapper spreads the headers into its own, or the key comes with its newline, then calls still carry them', async (t) => {
    const server = await startTestServer(t)
    const client = createClient({
      baseUrl: `${server.origin}/v1`,
      apiKey: `${server.key}\n`,
      fetch: (url, init) => fetch(url, { ...init, headers: { ...init.headers, 'x-trace': 'on' } }),
    })
    const pet = await client.createPet({ name: 'Spread', categoryId: 1n }, { idempotencyKey: 'spread' })
    assert.equal(
      (await client.createPet({ name: 'Spread', categoryId: 1n }, { idempotencyKey: 'spread' })).id,
      pet.id,
    )
  })

  test('when timeoutMs is past what a timer can wait, then createClient refuses it', () => {
    for (const timeoutMs of [2 ** 31, 2 ** 32, -1, 1.5]) {
      assert.throws(
        () => createClient({ baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'psk_unused', timeoutMs }),
        /timeoutMs must be a whole number of milliseconds from 0 to 2147483647/,
      )
    }
  })

  test('when the key holds a character a header cannot carry, then createClient refuses without echoing it', () => {
    for (const apiKey of ['psk_SECRET\r\nX-Evil: 1', 'psk_SECRET\u0000', 'psk_SECRET é', '', ' \n']) {
      assert.throws(
        () => createClient({ baseUrl: 'http://127.0.0.1:9/v1', apiKey }),
        (error: Error) => error instanceof TypeError && !error.message.includes('SECRET'),
      )
    }
  })

  test('when baseUrl is not an http(s) URL a path can follow, then createClient refuses it in one sentence', () => {
    for (const baseUrl of [
      'localhost:8080/v1',
      'ftp://host/v1',
      'http://host/v1?x=1',
      'http://host/v1#top',
      '',
    ]) {
      assert.throws(
        () => createClient({ baseUrl, apiKey: 'psk_unused' }),
        /^TypeError: baseUrl must be an http:\/\/ or https:\/\/ URL with no query or fragment/,
        baseUrl,
      )
    }
    assert.doesNotThrow(() =>
      createClient({ baseUrl: 'https://api.example.com/petstore/v1/', apiKey: 'psk_unused' }),
    )
  })

  test('when baseUrl has white space around it (a line read from a file), then calls go to the URL it names', async (t) => {
    const server = await startTestServer(t)
    for (const baseUrl of [`${server.origin}/v1 `, ` ${server.origin}/v1\t`, `${server.origin}/v1/ \n`]) {
      const client = createClient({ baseUrl, apiKey: server.key })
      assert.deepEqual((await client.listPets({ limit: 1 })).pets, [], JSON.stringify(baseUrl))
    }
  })

  test('when the engine has exact JSON and AbortSignal.any but no URL.canParse (Chrome 116 to 119), then the client works', async (t) => {
    const server = await startTestServer(t)
    const canParse = Object.getOwnPropertyDescriptor(URL, 'canParse')
    t.after(() => {
      if (canParse) Object.defineProperty(URL, 'canParse', canParse)
    })
    Reflect.deleteProperty(URL, 'canParse')
    const client = createClient({ baseUrl: `${server.origin}/v1`, apiKey: server.key })
    assert.equal((await client.createPet({ name: 'Old', categoryId: 1n })).name, 'Old')
    assert.throws(
      () => createClient({ baseUrl: 'localhost:8080/v1', apiKey: 'psk_unused' }),
      /^TypeError: baseUrl must/,
    )
  })

  test("when baseUrl names the pets collection rather than the API's root, then createClient says so instead of a call answering 400 for petId", async (t) => {
    const server = await startTestServer(t)
    for (const baseUrl of [
      `${server.origin}/v1/pets`,
      `${server.origin}/v1/pets/`,
      'https://api.example.com/v1/PETS',
    ]) {
      assert.throws(
        () => createClient({ baseUrl, apiKey: server.key }),
        /^TypeError: baseUrl names the pets collection: give the API's root, e.g\. http:\/\/localhost:8080\/v1/,
        baseUrl,
      )
    }
    const client = createClient({ baseUrl: `${server.origin}/v1/`, apiKey: server.key })
    assert.deepEqual((await client.listPets({ limit: 1 })).pets, [])
  })

  test('when baseUrl holds a user name or password, then createClient refuses it without echoing them', () => {
    for (const baseUrl of ['http://user:SECRET@127.0.0.1:9/v1', 'https://SECRET@api.example.com/v1']) {
      assert.throws(
        () => createClient({ baseUrl, apiKey: 'psk_unused' }),
        (error: Error) =>
          error instanceof TypeError &&
          /^baseUrl must not hold a user name or password/.test(error.message) &&
          !error.message.includes('SECRET'),
        baseUrl,
      )
    }
  })

  test('when a library has given bigints a toJSON (to a string or a number), then int64 values are still sent exact', async (t) => {
    const { client } = await clientOnServer(t)
    const prototype = BigInt.prototype as { toJSON?: () => unknown }
    t.after(() => {
      delete prototype.toJSON
    })
    for (const toJSON of [
      function (this: bigint) {
        return this.toString()
      },
      function (this: bigint) {
        return Number(this)
      },
    ]) {
      prototype.toJSON = toJSON
      const created = await client.createPet({ name: 'Shimmed', categoryId: ABOVE_DOUBLES })
      delete prototype.toJSON
      assert.equal((await client.getPet(created.id)).categoryId, ABOVE_DOUBLES)
    }
  })

  test('when an idempotency key holds spaces (inside, first or last) or opens with a quote, then it is sent quoted, each is a key of its own, and a retry with it replays its pet', async (t) => {
    const { client, seen } = await clientOnServer(t)
    const keys = ['order 1', ' order-1', 'order-1 ', '"order-1"', 'order-1', 'a "b" \\ c']
    const pets = []
    for (const [index, idempotencyKey] of keys.entries()) {
      const pet = { name: `Rex ${index}`, categoryId: 1n }
      const first = await client.createPet(pet, { idempotencyKey })
      assert.deepEqual(await client.createPet(pet, { idempotencyKey }), first, idempotencyKey)
      pets.push(first)
    }
    assert.equal(new Set(pets.map((pet) => pet.id)).size, keys.length, 'one pet per key')
    const sent = seen.map((request) => request.headers.get('idempotency-key'))
    assert.deepEqual(sent.slice(0, 2), ['"order 1"', '"order 1"'])
    assert.deepEqual(sent[6], '"\\"order-1\\""')
    assert.equal(sent[8], 'order-1', 'a key that goes bare is sent bare')
  })

  test('when an idempotency key holds a character a header cannot carry, then createPet refuses it, sending nothing', async () => {
    const { client, sent } = clientCountingSends()
    for (const idempotencyKey of ['ключ', 'a\r\nX-Evil: 1', 'tab\there']) {
      await assert.rejects(
        client.createPet({ name: 'Rex', categoryId: 1n }, { idempotencyKey }),
        /^TypeError: idempotencyKey must be printable ASCII/,
      )
    }
    assert.equal(sent(), 0)
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
