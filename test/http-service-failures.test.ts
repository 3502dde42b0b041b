import assert from 'node:assert/strict'
import { once } from 'node:events'
import { connect } from 'node:net'
import { describe, test } from 'node:test'
import { StoreUnavailableError } from '../src/errors.ts'
import { SqliteStore } from '../src/store/sqlite/sqlite-store.ts'
import type { Store } from '../src/store/store.ts'
import { failingStore } from './helpers/abuse-cases.ts'
import { call } from './helpers/api-client.ts'
import { waitUntil, within } from './helpers/bounded-wait.ts'
import { assertErrorBody, checkRawText, conformanceAt } from './helpers/conformance-fetch.ts'
import { startTestServer } from './helpers/test-server.ts'

describe('failures inside the service', () => {
  test('when the store fails unexpectedly, then 500 internal_error with no detail, path or stack', async (t) => {
    const secret = new Error('SQLITE_CORRUPT: database disk image is malformed at /srv/secret/pets.db')
    const store = failingStore('getPet', secret)
    const server = await startTestServer(t, { store })
    const response = await call(server, 'GET', '/v1/pets/1')
    assert.equal(response.status, 500)
    const body = assertErrorBody(response.text, 500, 'internal_error')
    assert.match(body.message, /^internal error \(request id [\w-]+\)$/)
    assert.doesNotMatch(response.text, /SQLITE|secret|\/srv|at .*\.ts/)
  })

  test('when the store is unavailable, then 503 service_unavailable with Retry-After', async (t) => {
    const unavailable = new StoreUnavailableError('connection refused to db.internal:5432')
    const store = failingStore('listPets', unavailable)
    const server = await startTestServer(t, { store })
    const response = await call(server, 'GET', '/v1/pets')
    assert.equal(response.status, 503)
    assertErrorBody(response.text, 503, 'service_unavailable')
    assert.equal(response.headers.get('retry-after'), '1')
    assert.doesNotMatch(response.text, /db\.internal/)
  })

  test('when the server closes, then the in-flight request completes and a later one gets 503', async (t) => {
    const real = new SqliteStore({ path: ':memory:', busyTimeoutMs: 100 })
    const { promise: released, resolve: release } = Promise.withResolvers<void>()
    const { promise: entered, resolve: enter } = Promise.withResolvers<void>()
    const slowStore = new Proxy(real, {
      get(target, property) {
        if (property === 'listPets') {
          return async (query: Parameters<Store['listPets']>[0]) => {
            enter()
            await released
            return target.listPets(query)
          }
        }
        const value = Reflect.get(target, property)
        return typeof value === 'function' ? value.bind(target) : value
      },
    })
    const server = await startTestServer(t, { store: slowStore })
    await conformanceAt(server.origin) // the document, fetched before the server closes
    const request = `GET /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${server.key}\r\n\r\n`
    const socket = connect({ host: '127.0.0.1', port: Number(new URL(server.origin).port) })
    let received = ''
    socket.on('data', (chunk) => {
      received += chunk
    })
    const ended = new Promise((resolve) => socket.on('close', resolve))
    socket.write(request)
    await entered
    const closing = server.app.close()
    // The listener closes once the app is closing; the second request must be read while the first waits.
    await waitUntil(() => !server.app.server.listening, 'the app did not stop listening')
    const secondRead = once(server.app.server, 'request')
    socket.write(request)
    await within(secondRead, 10_000, 'the second request was not read')
    release()
    await within(Promise.all([closing, ended]), 10_000, 'the app did not close, or left the connection open')
    const [first, second] = received.split(/(?=HTTP\/1\.1 )/)
    for (const answer of [first, second]) await checkRawText(server.origin, 'GET', '/v1/pets', answer ?? '')
    assert.match(first ?? '', /^HTTP\/1\.1 200 /, 'the in-flight request is completed')
    assert.match(second ?? '', /^HTTP\/1\.1 503 /)
    assert.match(second ?? '', /connection: close/i)
    assertErrorBody((second ?? '').slice((second ?? '').indexOf('\r\n\r\n') + 4), 503, 'service_unavailable')
  })
})
