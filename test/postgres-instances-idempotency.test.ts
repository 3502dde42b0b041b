import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import pg from 'pg'
import { call } from './helpers/bearer-call.ts'
import { waitUntil, within } from './helpers/bounded-wait.ts'
import { temporaryDirectory } from './helpers/cleanup.ts'
import { runCli, type ServeProcess, serveInstancesForTest } from './helpers/cli-process.ts'
import { checkedFetch } from './helpers/conformance-fetch.ts'
import { assertOneCreatedRestReplayedOrInFlight } from './helpers/idempotent-answers.ts'
import { sharedPostgres } from './helpers/postgres-server.ts'
import { adminOn } from './helpers/postgres-store-fixtures.ts'
import { engineSuiteOptions, postgresEngine } from './helpers/store-engines.ts'

/** The same create, with Idempotency-Key `idempotencyKey`, sent to `instance`. */
async function createOnce(instance: ServeProcess, key: string, idempotencyKey: string) {
  const response = await checkedFetch(instance.origin, '/v1/pets', {
    method: 'POST',
    headers: {
      authorization: `Bearer ${key}`,
      'content-type': 'application/json',
      'idempotency-key': idempotencyKey,
    },
    body: '{"name":"Once","categoryId":1}',
  })
  return {
    origin: instance.origin,
    status: response.status,
    text: await response.text(),
    headers: response.headers,
  }
}

// An advisory lock the test holds while an insert waits for it; any fixed number no service code uses.
const HOLD_LOCK = 0x686f6c64
// Sessions of this database waiting for an advisory lock: the held insert, then the batch queued behind it.
const ADVISORY_WAITS = `SELECT count(*) AS n FROM pg_stat_activity
  WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = 'advisory'`

describe('many instances on one PostgreSQL database', engineSuiteOptions(postgresEngine), () => {
  test('when both instances get the same Idempotency-Key at once, then exactly one pet is created and every answer replays it or is the in-flight 409', async (t) => {
    const cwd = temporaryDirectory(t)
    const env = { DATABASE_URL: await (await sharedPostgres()).createDatabase() }
    const key = (await runCli(['keys', 'create', '--name', 'retrying'], env, cwd)).stdout.trim()
    const instances = await serveInstancesForTest(t, env, cwd)
    const responses = await Promise.all(
      Array.from({ length: 20 }, (_, i) => createOnce(instances[i % 2] as ServeProcess, key, 'once')),
    )
    // Each instance's first request reaches the database (the in-flight check is per instance): one
    // creates, the other waits for its commit and replays it.
    for (const [index, instance] of instances.entries()) {
      const own = responses.filter((response) => response.origin === instance.origin)
      assert.ok(
        own.some((response) => response.status === 201),
        `instance ${index + 1} answered 201`,
      )
    }
    assertOneCreatedRestReplayedOrInFlight(responses)
    const listed = JSON.parse((await call(instances[0]?.origin ?? '', key, 'GET', '/v1/pets')).text)
    assert.equal(listed.length, 1)
  })

  test("when the database's default isolation is serializable, then both instances' creates of shared Idempotency-Keys still each make one pet, never a 503 for a serialization failure", async (t) => {
    const cwd = temporaryDirectory(t)
    const url = await (await sharedPostgres()).createDatabase()
    const admin = await adminOn(t, url)
    await admin.query(
      `ALTER DATABASE ${pg.escapeIdentifier(new URL(url).pathname.slice(1))} SET default_transaction_isolation = serializable`,
    )
    const env = { DATABASE_URL: url }
    const key = (await runCli(['keys', 'create', '--name', 'retrying'], env, cwd)).stdout.trim()
    const instances = await serveInstancesForTest(t, env, cwd)
    for (let round = 0; round < 10; round++) {
      const sent = Array.from({ length: 40 }, (_, i) =>
        createOnce(instances[Math.floor(i / 10) % 2] as ServeProcess, key, `key-${round}-${i % 10}`),
      )
      const answers = await Promise.all(sent)
      for (let k = 0; k < 10; k++) {
        assertOneCreatedRestReplayedOrInFlight(answers.filter((_, i) => i % 10 === k))
      }
    }
  })

  test('when an instance gets an Idempotency-Key whose create is still uncommitted on another, then it waits and replays that pet', async (t) => {
    const cwd = temporaryDirectory(t)
    const url = await (await sharedPostgres()).createDatabase()
    const env = { DATABASE_URL: url }
    const key = (await runCli(['keys', 'create', '--name', 'retrying'], env, cwd)).stdout.trim()
    const [first, second] = (await serveInstancesForTest(t, env, cwd)) as [ServeProcess, ServeProcess]
    // The first insert waits inside its transaction for a lock this test holds: uncommitted until released.
    const admin = await adminOn(t, url)
    await admin.query(`CREATE FUNCTION hold_insert() RETURNS trigger LANGUAGE plpgsql AS
      $$ BEGIN PERFORM pg_advisory_xact_lock_shared(${HOLD_LOCK}); RETURN NEW; END $$`)
    await admin.query(
      'CREATE TRIGGER hold_insert BEFORE INSERT ON pets FOR EACH ROW EXECUTE FUNCTION hold_insert()',
    )
    await admin.query('SELECT pg_advisory_lock($1)', [HOLD_LOCK])
    const waiting = async () => Number((await admin.query(ADVISORY_WAITS)).rows[0]?.n)

    const created = createOnce(first, key, 'held')
    await waitUntil(async () => (await waiting()) === 1, 'the first create never reached its insert')
    const replayed = createOnce(second, key, 'held')
    await waitUntil(async () => (await waiting()) === 2, 'the second instance never reached the database')
    const retry = await within(createOnce(first, key, 'held'), 5000, 'the retry waited for the first')
    await admin.query('SELECT pg_advisory_unlock($1)', [HOLD_LOCK])

    const answers = {
      created: await within(created, 5000, 'the first create did not finish once released'),
      retry,
      replayed: await within(replayed, 5000, 'the second instance did not answer once released'),
    }
    assert.equal(answers.retry.status, 409, 'a retry on the first instance meanwhile is refused as in flight')
    assert.equal(answers.replayed.status, 201, answers.replayed.text)
    assertOneCreatedRestReplayedOrInFlight(Object.values(answers))
    assert.equal(answers.created.headers.get('idempotent-replayed'), null, 'the first instance created it')
    const listed = JSON.parse((await call(first.origin, key, 'GET', '/v1/pets')).text)
    assert.equal(listed.length, 1)
  })
})
