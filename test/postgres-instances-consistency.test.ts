import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import { call } from './helpers/bearer-call.ts'
import { waitUntil, within } from './helpers/bounded-wait.ts'
import { temporaryDirectory } from './helpers/cleanup.ts'
import { runCli, type ServeProcess, serveInstancesForTest } from './helpers/cli-process.ts'
import { checkedFetch } from './helpers/conformance-fetch.ts'
import { sharedPostgres } from './helpers/postgres-server.ts'
import { engineSuiteOptions, postgresEngine } from './helpers/store-engines.ts'

const TTL_MS = 500
// Key of the advisory lock the test holds to stop an instance's transaction where it wants it.
const HOLD = 4242

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
    const instances = await serveInstancesForTest(t, env, cwd)

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

  test('when a key is revoked through the CLI, then every instance refuses it within the cache TTL', async (t) => {
    // Long enough that a lookup cached just before the revocation is usually still alive right after it.
    const ttlMs = 1500
    const cwd = temporaryDirectory(t)
    const env = {
      DATABASE_URL: await (await sharedPostgres()).createDatabase(),
      API_KEY_CACHE_TTL_MS: String(ttlMs),
    }
    const key = (await runCli(['keys', 'create', '--name', 'leaving'], env, cwd)).stdout.trim()
    const instances = await serveInstancesForTest(t, env, cwd)
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

  test('when an instance stops inside a write transaction holding the insert lock, then the server ends that transaction after the statement timeout and the other instance creates again', async (t) => {
    const cwd = temporaryDirectory(t)
    const url = await (await sharedPostgres()).createDatabase()
    const env = { DATABASE_URL: url, PG_STATEMENT_TIMEOUT_MS: '1000', RATE_LIMIT_PER_MINUTE: '0' }
    const key = (await runCli(['keys', 'create', '--name', 'shared'], env, cwd)).stdout.trim()
    const [a, b] = (await serveInstancesForTest(t, env, cwd)) as [ServeProcess, ServeProcess]
    const admin = new pg.Client({ connectionString: url })
    await admin.connect()
    t.after(() => admin.end())
    const keyed = (origin: string) =>
      checkedFetch(origin, '/v1/pets', {
        method: 'POST',
        headers: {
          authorization: `Bearer ${key}`,
          'content-type': 'application/json',
          'idempotency-key': 'k',
        },
        body: '{"name":"Rex","categoryId":1}',
      })
    assert.equal((await keyed(a.origin)).status, 201)
    // An expired record not yet purged: the key's next create runs in a transaction under the insert lock,
    // and replaces the record there, waiting on a lock this test holds.
    await admin.query('UPDATE idempotency_keys SET expires_at_ms = 0')
    await admin.query(`CREATE FUNCTION hold() RETURNS trigger LANGUAGE plpgsql AS
      $$ BEGIN PERFORM pg_advisory_xact_lock(${HOLD}); RETURN NEW; END $$`)
    await admin.query(
      'CREATE TRIGGER hold BEFORE UPDATE ON idempotency_keys FOR EACH ROW EXECUTE FUNCTION hold()',
    )
    await admin.query(`SELECT pg_advisory_lock(${HOLD})`)

    // Its answer; or, when the test fails before resuming the instance (and kills it), the fetch's failure.
    const stopped = keyed(a.origin).then(
      (response) => response.status,
      (error: Error) => error.message,
    )
    await waitUntil(
      async () =>
        (
          await admin.query(
            "SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND objid = $1 AND NOT granted",
            [HOLD],
          )
        ).rowCount !== 0,
      'the instance did not reach the held update',
    )
    // Paused there, as a host that hangs: once the update goes through, its transaction sits idle.
    a.child.kill('SIGSTOP')
    t.after(() => a.child.kill('SIGCONT'))
    await admin.query(`SELECT pg_advisory_unlock(${HOLD})`)

    const started = Date.now()
    await waitUntil(
      async () =>
        (await call(b.origin, key, 'POST', '/v1/pets', '{"name":"Tom","categoryId":1}')).status === 201,
      'the other instance could not create while the stopped one held the insert lock',
      { timeoutMs: 15_000, everyMs: 100 },
    )
    t.diagnostic(`the other instance created ${Date.now() - started} ms after the pause`)
    a.child.kill('SIGCONT')
    // Its transaction was ended, not committed: its create must not be acknowledged.
    const answer = await within(stopped, 15_000, 'the resumed instance did not answer')
    t.diagnostic(`the resumed instance answered ${answer}`)
    assert.notEqual(answer, 201)
  })
})
