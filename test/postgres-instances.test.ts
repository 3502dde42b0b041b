import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import { MIGRATION_LOCK } from '../src/store/postgres/postgres-migrator.ts'
import { waitUntil, within } from './helpers/bounded-wait.ts'
import { temporaryDirectory } from './helpers/cleanup.ts'
import { logLines, runCli, type ServeProcess, startServeProcess } from './helpers/cli-process.ts'
import { checkedFetch } from './helpers/conformance-fetch.ts'
import { assertOneCreatedRestReplayedOrInFlight } from './helpers/idempotent-answers.ts'
import { sharedPostgres } from './helpers/postgres-server.ts'
import { adminOn, emptyDatabase, storeOn, untilRows } from './helpers/postgres-store-fixtures.ts'
import { engineSuiteOptions, postgresEngine } from './helpers/store-engines.ts'

const TTL_MS = 500

async function call(origin: string, key: string, method: string, path: string, body?: string) {
  const response = await checkedFetch(origin, path, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body,
  })
  return { status: response.status, text: await response.text(), link: response.headers.get('link') }
}

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

/** The ids of every pet, page by page from `path`, following each page's `Link: rel="next"`. */
async function walkPages(origin: string, key: string, path: string): Promise<number[]> {
  const ids: number[] = []
  for (let next: string | undefined = path, pages = 0; next !== undefined; pages++) {
    assert.ok(pages < 1000, `the walk from ${path} did not end within 1000 pages`)
    const page = await call(origin, key, 'GET', next)
    assert.equal(page.status, 200, page.text)
    ids.push(...JSON.parse(page.text).map((pet: { id: number }) => pet.id))
    // The link may carry a public base URL; only its query matters to this instance.
    const link = /<([^>]+)>; rel="next"/.exec(page.link ?? '')?.[1]
    next = link === undefined ? undefined : `/v1/pets${new URL(link, origin).search}`
  }
  return ids
}

describe('many instances on one PostgreSQL database', engineSuiteOptions(postgresEngine), () => {
  test('when two instances take concurrent creates, then ids are distinct and both instances see everything', async (t) => {
    const cwd = temporaryDirectory(t)
    const env = {
      DATABASE_URL: await (await sharedPostgres()).createDatabase(),
      API_KEY_CACHE_TTL_MS: String(TTL_MS),
    }
    const key = (await runCli(['keys', 'create', '--name', 'shared'], env, cwd)).stdout.trim()
    const instances = await Promise.all([startServeProcess(env, cwd), startServeProcess(env, cwd)])
    for (const instance of instances) t.after(() => instance.child.kill('SIGKILL'))

    const created = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        call(
          instances[i % 2]?.origin ?? '',
          key,
          'POST',
          '/v1/pets',
          `{"name":"pet ${i}","categoryId":${9007199254740993n + BigInt(i)}}`,
        ),
      ),
    )
    assert.ok(created.every((response) => response.status === 201))
    const ids = created.map((response) => JSON.parse(response.text).id as number)
    assert.equal(new Set(ids).size, 200, 'every id is distinct')

    for (const instance of instances) {
      for (const response of created) {
        const id = /"id":(\d+)/.exec(response.text)?.[1]
        assert.equal((await call(instance.origin, key, 'GET', `/v1/pets/${id}`)).text, response.text)
      }
    }
    for (const query of ['?limit=100', '?limit=100&status=sold', '?limit=7']) {
      const [a, b] = await Promise.all(
        instances.map((instance) => call(instance.origin, key, 'GET', `/v1/pets${query}`)),
      )
      assert.equal(a?.text, b?.text, `both instances list the same pets for ${query}`)
    }
    const listed = JSON.parse((await call(instances[0]?.origin ?? '', key, 'GET', '/v1/pets?limit=100')).text)
    const ascending = [...ids].sort((x, y) => x - y)
    assert.deepEqual(
      listed.map((pet: { id: number }) => pet.id),
      ascending.slice(0, 100),
    )

    // A walks every page first, so its read cache holds each full page; then pets are added through B.
    const [a, b] = instances as [ServeProcess, ServeProcess]
    assert.deepEqual(await walkPages(a.origin, key, '/v1/pets?limit=30'), ascending)
    const late = await Promise.all(
      Array.from({ length: 45 }, (_, i) =>
        call(b.origin, key, 'POST', '/v1/pets', `{"name":"late ${i}","categoryId":1}`),
      ),
    )
    assert.ok(late.every((response) => response.status === 201))
    const lateIds = late.map((response) => JSON.parse(response.text).id as number).sort((x, y) => x - y)
    assert.ok((lateIds[0] ?? 0) > (ascending.at(-1) ?? 0), 'pets added later have higher ids')
    assert.deepEqual(
      await walkPages(a.origin, key, '/v1/pets?limit=30'),
      [...ascending, ...lateIds],
      "A's cached pages and its following pages show B's new pets, in id order",
    )
  })

  test('when an instance starts while another holds the migrations for longer than a statement may run, then it waits for it and starts, rather than fail at the statement timeout', async (t) => {
    const url = await emptyDatabase()
    const admin = await adminOn(t, url)
    // Another instance migrating: it holds the lock for three times the waiting store's statement timeout.
    await admin.query('BEGIN')
    await admin.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK])
    const store = storeOn(t, url, { statementTimeoutMs: 1000 })
    const migrating = store.migrate()
    await sleep(3000)
    await admin.query('COMMIT')
    const { current, latest } = await within(migrating, 10_000, 'the migration never ended')
    assert.equal(current, latest)
  })

  test('when an instance starts while another process holds the migrations, then one line says it waits for them, and it serves once they end', async (t) => {
    const url = await emptyDatabase()
    const admin = await adminOn(t, url)
    await admin.query('BEGIN')
    await admin.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK])
    const starting = startServeProcess({ DATABASE_URL: url }, temporaryDirectory(t))
    // Killed however the test ends: a start still waiting serves once the lock is let go with the admin.
    t.after(async () => (await starting.catch(() => undefined))?.child.kill('SIGKILL'))
    // Released once the start waits for it, however long a busy machine takes to get there.
    await untilRows(
      admin,
      "SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
      'the start never waited for the migration lock',
      { timeoutMs: 15_000, everyMs: 50 },
    )
    await admin.query('COMMIT')
    const server = await starting
    const waits = logLines(server).filter((line) => /migrat/.test(String(line.msg)))
    assert.deepEqual(
      waits.map(({ level, msg }) => [level, msg]),
      [
        [
          40,
          'another process holds the migration lock (migrating the database): waiting for it, up to 10 min',
        ],
      ],
    )
  })

  test('when a key is revoked through the CLI, then every instance refuses it within the cache TTL', async (t) => {
    // Long enough that a lookup cached just before the revocation is usually still alive right after it.
    const ttlMs = 1500
    const cwd = temporaryDirectory(t)
    const env = {
      DATABASE_URL: await (await sharedPostgres()).createDatabase(),
      API_KEY_CACHE_TTL_MS: String(ttlMs),
    }
    const key = (await runCli(['keys', 'create', '--name', 'leaving'], env, cwd)).stdout.trim()
    const instances = await Promise.all([startServeProcess(env, cwd), startServeProcess(env, cwd)])
    for (const instance of instances) t.after(() => instance.child.kill('SIGKILL'))
    for (const instance of instances)
      assert.equal((await call(instance.origin, key, 'GET', '/v1/pets')).status, 200)

    assert.equal((await runCli(['keys', 'revoke', 'leaving'], env, cwd)).status, 0)
    // Every lookup either instance cached was made before this moment, so none outlives it by more than the TTL.
    const bound = Date.now() + ttlMs
    const answers = await Promise.all(
      instances.map(async (instance) => {
        const seen: Array<{ sentAt: number; status: number }> = []
        while (seen.length === 0 || (seen.at(-1)?.sentAt ?? 0) < bound + 200) {
          const sentAt = Date.now()
          seen.push({ sentAt, status: (await call(instance.origin, key, 'GET', '/v1/pets')).status })
          await sleep(50)
        }
        return seen
      }),
    )
    for (const [index, seen] of answers.entries()) {
      const name = `instance ${index + 1}`
      for (const { sentAt, status } of seen) {
        assert.ok(status === 200 || status === 401, `${name} answered ${status}`)
        if (status === 200)
          assert.ok(sentAt < bound, `${name} accepted the key ${sentAt - bound} ms after the bound`)
      }
      const firstRefusal = seen.findIndex(({ status }) => status === 401)
      assert.ok(firstRefusal >= 0, `${name} refused the key`)
      assert.ok(
        seen.slice(firstRefusal).every(({ status }) => status === 401),
        `${name} never accepts the key again once it has refused it`,
      )
      assert.ok(
        seen.some(({ sentAt }) => sentAt >= bound),
        `${name} was asked after the bound (and refused, as checked above)`,
      )
      t.diagnostic(`${name}: accepted ${firstRefusal} calls after the revocation, all within the TTL`)
    }
  })

  test('when both instances get the same Idempotency-Key at once, then exactly one pet is created and every answer replays it or is the in-flight 409', async (t) => {
    const cwd = temporaryDirectory(t)
    const env = { DATABASE_URL: await (await sharedPostgres()).createDatabase() }
    const key = (await runCli(['keys', 'create', '--name', 'retrying'], env, cwd)).stdout.trim()
    const instances = await Promise.all([startServeProcess(env, cwd), startServeProcess(env, cwd)])
    for (const instance of instances) t.after(() => instance.child.kill('SIGKILL'))
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
    const instances = await Promise.all([startServeProcess(env, cwd), startServeProcess(env, cwd)])
    for (const instance of instances) t.after(() => instance.child.kill('SIGKILL'))
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
    const [first, second] = await Promise.all([startServeProcess(env, cwd), startServeProcess(env, cwd)])
    for (const instance of [first, second]) t.after(() => instance.child.kill('SIGKILL'))
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

  test("when a 1.0.0 instance serves while this release's first start adds the compatibility floors, then its readiness query keeps answering, before, during and after, and its own start still works", async (t) => {
    const { reopen, sql, databaseUrl } = await postgresEngine.open(t)
    // The bookkeeping as 1.0.0 left it: no floor column.
    await sql('ALTER TABLE schema_migrations DROP COLUMN compatible_from')
    const old = new pg.Client({ connectionString: databaseUrl })
    await old.connect()
    t.after(() => old.end())
    // 1.0.0's statements, as it sent them: its readiness probe is a named, prepared statement.
    const probe = { name: 'schema.status', text: 'SELECT max(version) AS current FROM schema_migrations' }
    assert.deepEqual((await old.query(probe)).rows, [{ current: 2 }])

    const answers: unknown[] = []
    let probing = true
    const probes = (async () => {
      while (probing) {
        try {
          answers.push((await old.query(probe)).rows[0]?.current)
        } catch (error) {
          answers.push(String(error))
        }
        await sleep(2)
      }
    })()
    // Counted, not timed: a loaded host fits fewer probes in a given time.
    const answered = (count: number) =>
      waitUntil(
        () => answers.length >= count,
        () => `only ${answers.length} probes`,
      )
    await answered(5)
    await reopen()
    const during = answers.length
    await answered(during + 5)
    probing = false
    await probes

    const floors = await sql('SELECT version, compatible_from FROM schema_migrations ORDER BY version')
    assert.deepEqual(
      floors.map((row) => [row.version, row.compatible_from]),
      [
        [1, null],
        [2, null],
      ],
      'the column added, the rows of 1.0.0 left without a floor',
    )
    assert.deepEqual(
      answers.filter((answer) => answer !== 2),
      [],
      'every probe answered schema 2',
    )
    // 1.0.0's own start reads and records versions by name, which the added column leaves as they were.
    await old.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`)
    assert.deepEqual((await old.query('SELECT version FROM schema_migrations')).rows, [
      { version: 1 },
      { version: 2 },
    ])
  })
})
