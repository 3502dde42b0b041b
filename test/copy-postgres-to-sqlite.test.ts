import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import pg from 'pg'
import { generateApiKey } from '../src/auth/api-key.ts'
import { runCli, stop } from './helpers/cli-process.ts'
import { postgresLack } from './helpers/postgres-server.ts'
import { adminOn, emptyDatabase, storeOn } from './helpers/postgres-store-fixtures.ts'
import { call, seedStore, serve, storeContents, walk } from './helpers/store-copy-fixtures.ts'
import { suiteNeeding } from './helpers/suite-requirements.ts'
import { temporaryDirectory } from './helpers/test-server.ts'

const PETS = 2000

/** The URL of a new role on `url`'s database that may only read it, in read-only transactions. */
async function readOnlyRole(url: string): Promise<string> {
  const role = `reader_${randomBytes(4).toString('hex')}`
  const admin = new pg.Client({ connectionString: url })
  await admin.connect()
  try {
    const database = new URL(url).pathname.slice(1)
    await admin.query(`CREATE ROLE ${role} LOGIN PASSWORD 'reader'`)
    await admin.query(`ALTER ROLE ${role} SET default_transaction_read_only = on`)
    await admin.query(`GRANT CONNECT ON DATABASE ${database} TO ${role}`)
    await admin.query(`GRANT USAGE ON SCHEMA public TO ${role}`)
    await admin.query(`GRANT SELECT ON ALL TABLES IN SCHEMA public TO ${role}`)
    await admin.query(`GRANT SELECT ON ALL SEQUENCES IN SCHEMA public TO ${role}`)
  } finally {
    await admin.end()
  }
  return Object.assign(new URL(url), { username: role, password: 'reader' }).href
}

describe('copy from PostgreSQL to SQLite', suiteNeeding('the copy suite', postgresLack()), () => {
  test('when --from names a PostgreSQL database with no Pet Store tables, then exit 1 with one line naming --from, the database and schema, and what to do, and no SQLite target is left', async (t) => {
    const cwd = temporaryDirectory(t)
    const empty = await emptyDatabase()
    const copied = await runCli(['copy', '--from', empty, '--to', 'sqlite:x.db'], {}, cwd)
    const database = new URL(empty).pathname.slice(1)
    assert.deepEqual(
      [copied.status, copied.stderr],
      [
        1,
        `petstore copy: --from (the source): no Pet Store tables in database ${database}, schema public: ` +
          'name a Pet Store database, or a backup of one\n',
      ],
    )
    assert.deepEqual(readdirSync(cwd), [])
  })

  test(`when ${PETS} pets, keys and idempotency records are copied back from PostgreSQL (by a role that may only read) into a new SQLite file, then SQLite serves them byte for byte, keys and Idempotency-Keys carry over, and new ids come after`, {
    timeout: 180_000,
  }, async (t) => {
    const cwd = temporaryDirectory(t)
    const url = await emptyDatabase()
    const oldKey = generateApiKey()
    const revokedKey = generateApiKey()
    await seedStore(storeOn(t, url), PETS, { oldKey, revokedKey })

    const before = await serve(t, { DATABASE_URL: url }, cwd)
    const replays: Array<{ key: string; body: string; answer: string }> = []
    for (let i = 0; i < 3; i++) {
      const body = `{"name":"retried ${i}","categoryId":-9223372036854775808}`
      const init = { method: 'POST', body, headers: { 'idempotency-key': `back-${i}` } }
      const response = await call(before, oldKey, '/v1/pets', init)
      assert.equal(response.status, 201)
      replays.push({ key: `back-${i}`, body, answer: await response.text() })
    }
    const pagesOnPostgres = await walk(before, oldKey, '/v1/pets?limit=100')
    await stop(before)

    // Read as from a standby, by a role that may only read: the copy writes nothing to its source.
    const reader = await readOnlyRole(url)
    const sqlite = `sqlite:${join(cwd, 'staging.db')}`
    const copied = await runCli(['copy', '--from', reader, '--to', sqlite, '--chunk-size', '500'], {}, cwd)
    assert.equal(copied.status, 0, copied.stderr)
    assert.match(
      copied.stdout,
      new RegExp(
        `^copied ${PETS + 3} pets, 2 API keys, 3 idempotency records in [\\d.]+ s; the next pet id will be above ${PETS + 3}\\n$`,
      ),
    )
    const [source, target] = await Promise.all([storeContents(url), storeContents(sqlite)])
    assert.deepEqual(target, source, 'pets, keys with hashes and counts, records, the secret, the highest id')

    const after = await serve(t, { DATABASE_URL: sqlite }, cwd)
    const pagesOnSqlite = await walk(after, oldKey, '/v1/pets?limit=100')
    assert.equal(pagesOnSqlite.length, pagesOnPostgres.length)
    for (const [index, page] of pagesOnPostgres.entries())
      assert.equal(pagesOnSqlite[index], page, `page ${index + 1}`)
    assert.equal((await call(after, revokedKey, '/v1/pets?limit=1')).status, 401, 'revoked stays revoked')
    for (const { key, body, answer } of replays) {
      const replay = await call(after, oldKey, '/v1/pets', {
        method: 'POST',
        body,
        headers: { 'idempotency-key': key },
      })
      assert.equal(replay.headers.get('idempotent-replayed'), 'true')
      assert.equal(await replay.text(), answer)
    }
    const created = await call(after, oldKey, '/v1/pets', {
      method: 'POST',
      body: '{"name":"first","categoryId":1}',
    })
    assert.equal(created.status, 201)
    assert.ok(JSON.parse(await created.text()).id > PETS + 3, 'the next id is above the highest copied')
    await stop(after)
  })

  test('when a PostgreSQL store is copied to SQLite and back onto itself, or to another database, then every timestamp keeps its microseconds and the copy back finds its own pets, not conflicts', {
    timeout: 120_000,
  }, async (t) => {
    const cwd = temporaryDirectory(t)
    const url = await emptyDatabase()
    // Pets made by PostgreSQL's clock (microseconds), and one at a whole millisecond, as SQLite writes them.
    await seedStore(storeOn(t, url), 20, { oldKey: generateApiKey(), revokedKey: generateApiKey() })
    const admin = await adminOn(t, url)
    await admin.query("UPDATE pets SET created_at = '2026-11-29 23:42:13.753+00' WHERE id = 1")
    await admin.query("UPDATE pets SET created_at = '2026-11-29 23:42:13.753862+00' WHERE id = 2")
    const micro = await admin.query<{ n: string }>(
      'SELECT count(*) AS n FROM pets WHERE extract(microseconds FROM created_at)::bigint % 1000 <> 0',
    )
    assert.ok(Number(micro.rows[0]?.n) > 0, 'some timestamps hold microseconds')
    const sqlite = `sqlite:${join(cwd, 'staging.db')}`
    const there = await runCli(['copy', '--from', url, '--to', sqlite], {}, cwd)
    assert.equal(there.status, 0, there.stderr)
    const back = await runCli(['copy', '--from', sqlite, '--to', url, '--into-non-empty'], {}, cwd)
    assert.equal(back.status, 0, back.stderr)
    assert.match(back.stdout, /^copied 0 pets/)

    const other = await emptyDatabase()
    assert.equal((await runCli(['copy', '--from', url, '--to', other], {}, cwd)).status, 0)
    const [from, to, staged] = await Promise.all([
      storeContents(url),
      storeContents(other),
      storeContents(sqlite),
    ])
    assert.deepEqual(to.pets, from.pets)
    assert.deepEqual(to.keys, from.keys)
    assert.equal(
      staged.pets[0]?.created_at,
      '2026-11-29T23:42:13.753Z',
      'a whole millisecond as SQLite writes it',
    )
  })
})
