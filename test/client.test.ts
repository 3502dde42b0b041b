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

  test('when an idempotency key is not a string (null from a nullable column, a number), then createPet refuses it, sending nothing', async () => {
    const { client, sent } = clientCountingSends()
    for (const idempotencyKey of [null, 42, {}]) {
      await assert.rejects(
        client.createPet(
          { name: 'Rex', categoryId: 1n },
          { idempotencyKey: idempotencyKey as unknown as string },
        ),
        /^TypeError: idempotencyKey must be a string/,
      )
    }
    assert.equal(sent(), 0)
  })

  test('when a fetch wrapper outlasts the time limit or the signal (it waits between retries, or never settles), then the call ends at the limit all the same', async () => {
    const waits: Array<Promise<Response>> = []
    const slowRetries = (answered: boolean) => async (): Promise<Response> => {
      // Each sending is refused at once; the wrapper waits 2 s before sending again, as a retry wrapper does.
      await new Promise((resolve) => setTimeout(resolve, 2000))
      if (!answered) await new Promise(() => {})
      const late = new Response('[]', { headers: { 'content-type': 'application/json' } })
      waits.push(Promise.resolve(late))
      return late
    }
    for (const answered of [true, false]) {
      const options = { baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'psk_unused', fetch: slowRetries(answered) }
      let started = performance.now()
      await assert.rejects(createClient({ ...options, timeoutMs: 300 }).listPets(), { name: 'TimeoutError' })
      assert.ok(performance.now() - started < 1500, `at the limit: ${performance.now() - started} ms`)
      started = performance.now()
      const caller = new AbortController()
      setTimeout(() => caller.abort(new Error('the caller gave up')), 100)
      await assert.rejects(
        createClient({ ...options, timeoutMs: 0 }).listPets({}, { signal: caller.signal }),
        { message: 'the caller gave up' },
      )
      assert.ok(performance.now() - started < 1500, `at the abort: ${performance.now() - started} ms`)
    }
    // The answers that came after the call had ended are read no further (their bodies cancelled).
    await new Promise((resolve) => setTimeout(resolve, 2500))
    assert.equal(waits.length, 2)
    for (const late of waits) assert.equal((await late).bodyUsed, true)
  })
})
