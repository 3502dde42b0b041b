import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { describe, test } from 'node:test'
import { promisify } from 'node:util'
import { deprecationNoticeOf } from '../packages/client/src/deprecation-notice.ts'
import { createClient, type DeprecationNotice, PetStoreError } from '../packages/client/src/index.ts'
import { startTestServer } from './helpers/test-server.ts'

// What the service announces for getPet (src/pets/get-pet-deprecation.ts): deprecated on 1 November 2026,
// scheduled for removal on 5 December 2030, listPets its successor.
const DEPRECATED_AT = new Date(Date.UTC(2026, 10, 1))
const SUNSET = new Date(Date.UTC(2030, 11, 5))

describe('typed client: deprecation notices', () => {
  test('when getPet answers, then onDeprecation is told its dates, successor and request id before the call returns', async (t) => {
    const server = await startTestServer(t)
    const notices: DeprecationNotice[] = []
    let returned = false
    const client = createClient({
      baseUrl: `${server.origin}/v1`,
      apiKey: server.key,
      onDeprecation: (notice) => {
        assert.equal(returned, false, 'told after the call returned')
        notices.push(notice)
      },
    })
    const created = await client.createPet({ name: 'Rex', categoryId: 1n })
    await client.listPets()
    assert.equal(notices.length, 0, 'createPet and listPets are not deprecated')

    assert.deepEqual(await client.getPet(created.id), created)
    returned = true
    assert.equal(notices.length, 1)
    const notice = notices[0] as DeprecationNotice
    assert.equal(notice.operation, 'getPet')
    assert.deepEqual(notice.deprecatedAt, DEPRECATED_AT)
    assert.deepEqual(notice.sunset, SUNSET)
    assert.equal(notice.successor?.href, `${server.origin}/v1/pets`)
    assert.equal(notice.status, 200)
    assert.match(notice.requestId ?? '', /^[0-9a-f-]{36}$/)
  })

  test('when getPet fails, then onDeprecation is still told, with the status, and the error is still thrown', async (t) => {
    const server = await startTestServer(t)
    const notices: DeprecationNotice[] = []
    const client = createClient({
      baseUrl: `${server.origin}/v1`,
      apiKey: server.key,
      onDeprecation: (notice) => notices.push(notice),
    })
    const error = await client.getPet(404n).catch((error: unknown) => error)
    assert.ok(error instanceof PetStoreError)
    assert.equal(error.code, 'pet_not_found')
    assert.deepEqual(
      notices.map(({ operation, status, requestId }) => ({ operation, status, requestId })),
      [{ operation: 'getPet', status: 404, requestId: error.requestId }],
    )
  })

  test('when onDeprecation throws, or rejects, then the call rejects with what it threw', async (t) => {
    const server = await startTestServer(t)
    const thrown = new Error('deprecated call refused by policy')
    const client = createClient({
      baseUrl: `${server.origin}/v1`,
      apiKey: server.key,
      onDeprecation: () => {
        throw thrown
      },
    })
    const created = await client.createPet({ name: 'Tom', categoryId: 2n })
    await assert.rejects(client.getPet(created.id), (error) => error === thrown)
    const rejecting = createClient({
      baseUrl: `${server.origin}/v1`,
      apiKey: server.key,
      onDeprecation: async () => {
        throw thrown
      },
    })
    await assert.rejects(rejecting.getPet(created.id), (error) => error === thrown, 'an async one is awaited')
  })

  test('when onDeprecation never settles, then the call still ends at its time limit, or when its signal aborts', async (t) => {
    const server = await startTestServer(t)
    const created = await createClient({ baseUrl: `${server.origin}/v1`, apiKey: server.key }).createPet({
      name: 'Hang',
      categoryId: 3n,
    })
    const hanging = {
      baseUrl: `${server.origin}/v1`,
      apiKey: server.key,
      onDeprecation: () => new Promise(() => {}),
    }
    const timed = await createClient({ ...hanging, timeoutMs: 300 })
      .getPet(created.id)
      .catch((error: unknown) => error)
    assert.equal((timed as Error).name, 'TimeoutError')
    const controller = new AbortController()
    setTimeout(() => controller.abort(), 100)
    const aborted = await createClient({ ...hanging, timeoutMs: 0 })
      .getPet(created.id, { signal: controller.signal })
      .catch((error: unknown) => error)
    assert.equal((aborted as Error).name, 'AbortError')
  })

  test('when onDeprecation never settles in a process with nothing else to do, then the call still ends at its time limit instead of the process ending unanswered', async (t) => {
    const server = await startTestServer(t)
    const created = await createClient({ baseUrl: `${server.origin}/v1`, apiKey: server.key }).createPet({
      name: 'Alone',
      categoryId: 5n,
    })
    const client = new URL('../packages/client/src/index.ts', import.meta.url).href
    const script = `
      const { createClient } = await import(${JSON.stringify(client)})
      const c = createClient({ baseUrl: process.argv[1], apiKey: process.argv[2], timeoutMs: 300,
        onDeprecation: () => new Promise(() => {}) })
      c.getPet(${created.id}n).then(() => console.log('answered'), (error) => console.log(error.name))`
    // Not spawnSync: the server answering the child runs in this process.
    const child = await promisify(execFile)(
      process.execPath,
      ['--input-type=module', '-e', script, `${server.origin}/v1`, server.key],
      { encoding: 'utf8', timeout: 20_000 },
    )
    assert.equal(child.stdout.trim(), 'TimeoutError', child.stderr)
  })

  test('when the answer announces the deprecation and its body never comes, then onDeprecation is told before the call times out', async (t) => {
    const server = await startTestServer(t)
    const created = await createClient({ baseUrl: `${server.origin}/v1`, apiKey: server.key }).createPet({
      name: 'Slow',
      categoryId: 4n,
    })
    // The answer's head as the service sent it, its body stalled as on a network that stops mid-answer.
    // The head is fetched without the call's signal: on a loaded host it may come after the time limit,
    // and it is still to be told (the call then ends at once).
    const stalledBody: typeof fetch = async (input, init) => {
      const answer = await fetch(input, { ...init, signal: null })
      const body = new ReadableStream({
        start(controller) {
          init?.signal?.addEventListener('abort', () => controller.error(init.signal?.reason))
        },
      })
      return new Response(body, { status: answer.status, headers: answer.headers })
    }
    const notices: DeprecationNotice[] = []
    const client = createClient({
      baseUrl: `${server.origin}/v1`,
      apiKey: server.key,
      timeoutMs: 300,
      fetch: stalledBody,
      onDeprecation: (notice) => notices.push(notice),
    })
    const error = await client.getPet(created.id).catch((error: unknown) => error)
    assert.equal((error as Error).name, 'TimeoutError')
    assert.deepEqual(
      notices.map(({ operation, status }) => ({ operation, status })),
      [{ operation: 'getPet', status: 200 }],
    )
  })

  test('when onDeprecation throws, at once or later, or the call is already over when the head comes, then the body is let go and nothing is left unhandled', async (t) => {
    const server = await startTestServer(t)
    const created = await createClient({ baseUrl: `${server.origin}/v1`, apiKey: server.key }).createPet({
      name: 'Gone',
      categoryId: 5n,
    })
    let cancelled = 0
    // The service's head, a body whose cancel is seen; `lateMs` hands the answer over after that long.
    const watchedBody =
      (lateMs = 0): typeof fetch =>
      async (input, init) => {
        const answer = await fetch(input, { ...init, signal: null })
        await answer.body?.cancel()
        await new Promise((resolve) => setTimeout(resolve, lateMs))
        const body = new ReadableStream({
          cancel() {
            cancelled++
          },
        })
        return new Response(body, { status: answer.status, headers: answer.headers })
      }
    const thrown = new Error('refused by policy')
    const options = { baseUrl: `${server.origin}/v1`, apiKey: server.key }
    const throwing = createClient({
      ...options,
      fetch: watchedBody(),
      onDeprecation: () => {
        throw thrown
      },
    })
    await assert.rejects(throwing.getPet(created.id), (error) => error === thrown)
    assert.equal(cancelled, 1, 'a listener throwing at once lets the body go')

    const unhandled: unknown[] = []
    const onUnhandled = (reason: unknown) => unhandled.push(reason)
    process.on('unhandledRejection', onUnhandled)
    t.after(() => process.off('unhandledRejection', onUnhandled))
    const late = createClient({
      ...options,
      timeoutMs: 100,
      fetch: watchedBody(300),
      onDeprecation: async () => {
        await new Promise((resolve) => setTimeout(resolve, 20))
        throw thrown
      },
    })
    const error = await late.getPet(created.id).catch((error: unknown) => error)
    assert.equal((error as Error).name, 'TimeoutError')
    // The call ended at its limit (100 ms); the answer comes at 300 ms.
    await new Promise((resolve) => setTimeout(resolve, 400))
    assert.deepEqual(unhandled, [], "the listener's later rejection is handled")
    assert.equal(cancelled, 2, 'an answer coming after the time limit lets the body go')
  })

  test('when an answer carries a date past what Date holds, or a successor that is no URL, then those are undefined and the call goes on', () => {
    const response = new Response(null, {
      headers: {
        deprecation: '@999999999999999',
        sunset: 'not a date',
        link: '<http://[bad>; rel="successor-version"',
      },
    })
    const notice = deprecationNoticeOf('getPet', response)
    assert.deepEqual(
      { ...notice },
      {
        operation: 'getPet',
        deprecatedAt: undefined,
        sunset: undefined,
        successor: undefined,
        status: 200,
        requestId: undefined,
      },
    )
    assert.equal(deprecationNoticeOf('listPets', new Response(null)), undefined, 'no Deprecation, no notice')
  })
})
