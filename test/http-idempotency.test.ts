import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { generateApiKey, storedFormOf } from '../src/auth/api-key.ts'
import { call } from './helpers/api-client.ts'
import { within } from './helpers/bounded-wait.ts'
import { holdFirstCreate } from './helpers/held-store.ts'
import { assertOneCreatedRestReplayedOrInFlight, IN_FLIGHT_BODY } from './helpers/idempotent-answers.ts'
import { rawHttp } from './helpers/raw-http.ts'
import { engineSuiteOptions, storeEngines } from './helpers/store-engines.ts'
import { startTestServer, type TestServer } from './helpers/test-server.ts'

const REX = '{"name":"Rex","categoryId":9007199254740993,"status":"available"}'

function post(server: TestServer, key: string | undefined, body = REX, apiKey?: string) {
  return call(server, 'POST', '/v1/pets', {
    body,
    headers: key === undefined ? {} : { 'idempotency-key': key },
    ...(apiKey ? { key: apiKey } : {}),
  })
}

async function petCount(server: TestServer) {
  return (await server.store.listPets({ limit: 100_000 })).length
}

for (const engine of storeEngines) {
  describe(`idempotent create (${engine.name})`, engineSuiteOptions(engine), () => {
    test('when a create is retried with the same key and body, then the first 201 is replayed byte for byte', async (t) => {
      const server = await startTestServer(t, { engine })
      const first = await post(server, 'order-1')
      const retry = await post(
        server,
        'order-1',
        '{ "status": "available", "categoryId": 9007199254740993, "name": "Rex" }',
      )
      assert.equal(first.status, 201)
      assert.equal(retry.status, 201)
      assert.equal(retry.text, first.text)
      assert.equal(retry.headers.get('location'), first.headers.get('location'))
      assert.equal(first.headers.get('idempotent-replayed'), null)
      assert.equal(retry.headers.get('idempotent-replayed'), 'true')
      assert.equal(await petCount(server), 1)
      assert.equal((await post(server, '"order-1"')).text, first.text, 'the quoted form is the same key')
      // A key holding `"` and `\`: quoted, each escaped; unescaped, it is the key sent bare.
      const bare = await post(server, 'order"1\\b')
      assert.equal(bare.status, 201)
      assert.equal(
        (await post(server, '"order\\"1\\\\b"')).text,
        bare.text,
        'quoted and escaped, the same key',
      )
      assert.equal(await petCount(server), 2)
    })

    test('when the same key comes with a body that differs in any one field, then 422 and nothing is created', async (t) => {
      const server = await startTestServer(t, { engine })
      await post(server, 'order-2')
      // Each differs from REX in one field only; the categoryId is one below it, the same double.
      const others = [
        '{"name":"Rey","categoryId":9007199254740993,"status":"available"}',
        '{"name":"Rex","categoryId":9007199254740992,"status":"available"}',
        '{"name":"Rex","categoryId":9007199254740993,"status":"sold"}',
        '{"name":"Rex","categoryId":9007199254740993}',
      ]
      for (const body of others) {
        const response = await post(server, 'order-2', body)
        assert.equal(response.status, 422, body)
        assert.equal(response.json.code, 'idempotency_key_reused', body)
      }
      assert.equal(await petCount(server), 1)
    })

    test('when 50 identical creates with one key race, then exactly one creates the pet and every other answer replays it or is the in-flight 409', async (t) => {
      // How many answers are 409 depends on timing; the test below makes one deterministically.
      const server = await startTestServer(t, { engine })
      const responses = await Promise.all(Array.from({ length: 50 }, () => post(server, 'race')))
      assertOneCreatedRestReplayedOrInFlight(responses)
      assert.equal(await petCount(server), 1)
    })

    test('when a retry comes while the first request with its key is still running, then 409 idempotency_key_in_flight with Retry-After, and the first still creates one pet', async (t) => {
      const held = holdFirstCreate((await engine.open(t)).store)
      // Released before the server closes, even when an assertion fails: a held request would hold the close.
      t.after(held.release)
      const server = await startTestServer(t, { store: held.store })
      const first = post(server, 'slow-order')
      await within(held.entered, 5000, 'the first create did not reach the store')
      const retry = await within(post(server, 'slow-order'), 5000, 'the retry waited for the first request')
      assert.equal(retry.status, 409, retry.text)
      assert.deepEqual(retry.json, IN_FLIGHT_BODY)
      assert.equal(retry.headers.get('retry-after'), '1')
      assert.equal(retry.headers.get('idempotent-replayed'), null)
      held.release()
      const created = await within(first, 5000, 'the first create did not finish once released')
      assert.equal(created.status, 201, created.text)
      const later = await post(server, 'slow-order')
      assert.equal(later.status, 201)
      assert.equal(later.text, created.text, 'once the first has finished, a retry replays it')
      assert.equal(later.headers.get('idempotent-replayed'), 'true')
      assert.equal(await petCount(server), 1)
    })

    test('when another API key uses the same idempotency key, even while the first is still running, then it creates its own pet', async (t) => {
      const held = holdFirstCreate((await engine.open(t)).store)
      t.after(held.release)
      const server = await startTestServer(t, { store: held.store })
      const other = generateApiKey()
      await server.store.createApiKey(storedFormOf('other', other))
      const first = post(server, 'shared-key')
      await within(held.entered, 5000, 'the first create did not reach the store')
      const theirs = await within(post(server, 'shared-key', REX, other), 5000, 'the other key waited')
      assert.equal(theirs.status, 201, theirs.text)
      held.release()
      const mine = await within(first, 5000, 'the first create did not finish once released')
      assert.equal(mine.status, 201, mine.text)
      assert.notEqual(theirs.json.id, mine.json.id)
      assert.equal(
        (await post(server, 'shared-key', REX, other)).text,
        theirs.text,
        'each key replays its own',
      )
      assert.equal((await post(server, 'shared-key')).text, mine.text)
      assert.equal(await petCount(server), 2)
    })

    test('when the retry comes after a restart, then it is still replayed', async (t) => {
      const opened = await engine.open(t)
      const server = await startTestServer(t, { store: opened.store })
      const first = await post(server, 'before-restart')
      await server.app.close()
      await server.store.close()
      // A new store on the same data, as the restarted process opens it: nothing is carried in memory.
      const restarted = await startTestServer(t, { store: await opened.reopen(), key: server.key })
      const retry = await post(restarted, 'before-restart')
      assert.equal(retry.text, first.text)
      assert.equal(retry.headers.get('idempotent-replayed'), 'true')
      assert.equal(await petCount(restarted), 1)
    })

    test('when the retention has passed, then the key is forgotten and purged', async (t) => {
      let clock = Date.UTC(2027, 0, 1)
      const server = await startTestServer(t, {
        engine,
        env: { IDEMPOTENCY_RETENTION_S: '60' },
        app: { now: () => clock },
      })
      const first = await post(server, 'short-lived')
      assert.equal(first.status, 201, first.text)
      clock += 59_999
      const kept = await post(server, 'short-lived')
      assert.equal(kept.headers.get('idempotent-replayed'), 'true', 'replayed until its last millisecond')
      // Expired at its retention's end, as the purge (which deletes at expires_at <= now) takes it.
      clock += 1
      const later = await post(server, 'short-lived')
      assert.equal(later.status, 201)
      assert.notEqual(later.json.id, first.json.id)
      assert.equal(later.headers.get('idempotent-replayed'), null)
      clock += 60_000
      assert.equal(await server.store.purgeIdempotencyRecords(clock), 1)
    })

    test('when the app starts, then its purge job removes the keys that had expired and keeps the others', async (t) => {
      const clock = Date.UTC(2027, 0, 1)
      const { store } = await engine.open(t)
      // A create sent again with its key, as of a moment its record was still kept: replayed only if the
      // record is stored; a new pet (and record) if it is gone.
      const keyed = (idempotencyKey: string, requestedAtMs: number, expiresAtMs: number) =>
        store.createPet({
          pet: { name: idempotencyKey, categoryId: 1n },
          idempotency: { apiKeyId: 1n, idempotencyKey, fingerprint: 'f', requestedAtMs, expiresAtMs },
        })
      const expired = (await keyed('expired', clock - 120_000, clock - 60_000)).pet
      const kept = (await keyed('kept', clock - 1000, clock + 60_000)).pet
      const replay = (key: string) => keyed(key, clock - 90_000, clock + 60_000)
      // Seeding stored both records: otherwise the purge below would pass with nothing to purge.
      assert.deepEqual(
        await replay('expired'),
        { pet: expired, replayed: true },
        'the expired record is stored',
      )
      assert.deepEqual(await replay('kept'), { pet: kept, replayed: true }, 'the live record is stored')

      const server = await startTestServer(t, { store, app: { now: () => clock } })
      // The job runs as the app starts and hourly; closing lets the run in progress finish its chunk.
      await server.app.close()
      assert.deepEqual(await replay('kept'), { pet: kept, replayed: true }, 'the live record was kept')
      assert.equal((await replay('expired')).replayed, false, 'the expired record was purged')
    })

    test('when the Idempotency-Key header is malformed or repeated, then 400 invalid_idempotency_key', async (t) => {
      const server = await startTestServer(t, { engine })
      for (const bad of ['', 'x'.repeat(256), 'naïve', 'two words', '"unterminated', '"a"b"']) {
        const response = await post(server, bad)
        assert.equal(response.status, 400, JSON.stringify(bad))
        assert.equal(response.json.code, 'invalid_idempotency_key')
        // The rule in words, never the regular expression that checks it.
        assert.match(
          response.json.message,
          /^header "idempotency-key" (must be sent once, as 1 to 255 printable|must be a string)/,
        )
        assert.doesNotMatch(response.json.message, /[\^$[\]]/)
      }
      // Twice, halves whose joining reads as one quoted key: a proxy keeping either would disagree.
      const body = '{"name":"Rex","categoryId":1}'
      const repeated = await rawHttp(
        server.origin,
        `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${server.key}\r\n` +
          `Content-Type: application/json\r\nIdempotency-Key: "split\r\nIdempotency-Key: key"\r\n` +
          `Content-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
      )
      assert.equal(repeated.status, 400, repeated.body)
      assert.equal(JSON.parse(repeated.body).code, 'invalid_idempotency_key')
      assert.equal(await petCount(server), 0)
    })
  })
}
