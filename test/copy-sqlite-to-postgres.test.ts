import assert from 'node:assert/strict'
import { join } from 'node:path'
import { describe, type TestContext, test } from 'node:test'
import { generateApiKey } from '../src/auth/api-key.ts'
import { SqliteStore } from '../src/store/sqlite/sqlite-store.ts'
import { logLines, runCli, type ServeProcess, stop } from './helpers/cli-process.ts'
import { postgresLack, sharedPostgres } from './helpers/postgres-server.ts'
import { call, seedStore, serve, walk } from './helpers/store-copy-fixtures.ts'
import { postgresSql } from './helpers/store-engines.ts'
import { suiteNeeding } from './helpers/suite-requirements.ts'
import { temporaryDirectory } from './helpers/test-server.ts'

const PETS = 10_000

/** A SQLite source in a directory of the test's own, seeded with `pets` pets and a key. */
async function seededSource(t: TestContext, pets: number) {
  const cwd = temporaryDirectory(t)
  const oldKey = generateApiKey()
  await seedStore(new SqliteStore({ path: join(cwd, 'source.db'), busyTimeoutMs: 5000 }), pets, {
    oldKey,
    revokedKey: generateApiKey(),
  })
  return { cwd, sqlite: `sqlite:${join(cwd, 'source.db')}`, oldKey }
}

describe('copy from SQLite to PostgreSQL', suiteNeeding('the copy suite', postgresLack()), () => {
  test('when the PostgreSQL target answers but takes no writes (read-only), then copy says it refuses them, not that it went away', async (t) => {
    const cwd = temporaryDirectory(t)
    const source = `sqlite:${join(cwd, 'source.db')}`
    assert.equal((await runCli(['seed', '--count', '5'], { DATABASE_URL: source }, cwd)).status, 0)
    const target = await (await sharedPostgres()).createDatabase()
    assert.equal((await runCli(['migrate'], { DATABASE_URL: target }, cwd)).status, 0)
    const database = new URL(target).pathname.slice(1)
    await postgresSql(target, `ALTER DATABASE "${database}" SET default_transaction_read_only = on`)
    const copied = await runCli(['copy', '--from', source, '--to', target], {}, cwd)
    assert.equal(copied.status, 1, copied.stderr)
    assert.match(
      copied.stderr,
      /^petstore copy: --to \(the target\): the database is read-only .*; make it take writes \(.+\), then run it again\n$/,
    )
  })

  test(`when ${PETS} pets, keys and idempotency records are copied (interrupted once), then PostgreSQL serves them byte for byte, keys, cursors and Idempotency-Keys carry over, and new ids come after`, {
    timeout: 300_000,
  }, async (t) => {
    const cwd = temporaryDirectory(t)
    const sqlite = `sqlite:${join(cwd, 'source.db')}`
    const oldKey = generateApiKey()
    const revokedKey = generateApiKey()
    await seedStore(new SqliteStore({ path: join(cwd, 'source.db'), busyTimeoutMs: 5000 }), PETS, {
      oldKey,
      revokedKey,
    })

    const before = await serve(t, { DATABASE_URL: sqlite }, cwd)
    const replays: Array<{ key: string; body: string; answer: string }> = []
    for (let i = 0; i < 3; i++) {
      const body = `{"name":"retried ${i}","categoryId":9223372036854775807}`
      const response = await call(before, oldKey, '/v1/pets', {
        method: 'POST',
        body,
        headers: { 'idempotency-key': `move-${i}` },
      })
      assert.equal(response.status, 201)
      replays.push({ key: `move-${i}`, body, answer: await response.text() })
    }
    const firstPage = await call(before, oldKey, '/v1/pets?limit=100&status=sold')
    const oldCursor = /<([^>]+)>; rel="next"/.exec(firstPage.headers.get('link') ?? '')?.[1] as string
    assert.ok(oldCursor, 'a next link')
    const cursorPath = new URL(oldCursor, before.origin)
    const afterCursorOnSqlite = await (
      await call(before, oldKey, cursorPath.pathname + cursorPath.search)
    ).text()
    const pagesOnSqlite = await walk(before, oldKey, '/v1/pets?limit=100')
    await stop(before)
    const keysOnSqlite = (await runCli(['keys', 'list', '--json'], { DATABASE_URL: sqlite }, cwd)).stdout

    const postgres = await sharedPostgres()
    const url = await postgres.createDatabase()
    const copy = ['copy', '--from', sqlite, '--to', url, '--chunk-size', '1000']
    const stopped = await runCli([...copy, '--max-chunks', '3'], {}, cwd)
    assert.equal(stopped.status, 3, stopped.stderr)
    assert.match(
      stopped.stdout,
      /^copied 3000 pets, 2 API keys, 0 idempotency records in [\d.]+ s, then stopped \(--max-chunks\); run it again to continue\n$/,
    )

    const occupied = await postgres.createDatabase()
    assert.equal(
      (await runCli(['keys', 'create', '--name', 'someone'], { DATABASE_URL: occupied }, cwd)).status,
      0,
    )
    const refused = await runCli(['copy', '--from', sqlite, '--to', occupied], {}, cwd)
    assert.deepEqual(
      [refused.status, refused.stderr],
      [
        1,
        'petstore copy: the target already holds 0 pets and 1 API key, and is not an earlier copy of this ' +
          "source; its API keys and the source's would collide (each store numbers its keys from 1): copy " +
          'into a database no service has started on, or give --without-keys --into-non-empty to copy the ' +
          'pets alone\n',
      ],
    )
    const petsAlone = ['copy', '--from', sqlite, '--to', occupied, '--without-keys', '--into-non-empty']
    const alone = await runCli(petsAlone, {}, cwd)
    assert.equal(alone.status, 0, `the way it names works: ${alone.stderr}`)

    const resumed = await runCli(copy, {}, cwd)
    assert.equal(resumed.status, 0, resumed.stderr)
    const highest = JSON.parse(replays[2]?.answer as string).id as number
    assert.match(
      resumed.stdout,
      new RegExp(
        `^copied ${PETS + 3 - 3000} pets, 0 API keys \\(2 already there, brought up to date\\), 3 idempotency records in [\\d.]+ s; the next pet id will be above ${PETS + 3}\\n$`,
      ),
    )
    assert.equal(highest, PETS + 3)

    const after = await serve(t, { DATABASE_URL: url }, cwd)
    const pagesOnPostgres = await walk(after, oldKey, '/v1/pets?limit=100')
    assert.equal(pagesOnPostgres.length, pagesOnSqlite.length)
    for (const [index, page] of pagesOnSqlite.entries())
      assert.equal(pagesOnPostgres[index], page, `page ${index + 1}`)
    const continued = await call(after, oldKey, cursorPath.pathname + cursorPath.search)
    assert.equal(continued.status, 200, 'a cursor from the SQLite service continues the walk')
    assert.equal(await continued.text(), afterCursorOnSqlite)
    assert.equal(
      (await call(after, revokedKey, '/v1/pets?limit=1')).status,
      401,
      'a revoked key stays revoked',
    )
    for (const { key, body, answer } of replays) {
      const replay = await call(after, oldKey, '/v1/pets', {
        method: 'POST',
        body,
        headers: { 'idempotency-key': key },
      })
      assert.equal(replay.status, 201)
      assert.equal(replay.headers.get('idempotent-replayed'), 'true')
      assert.equal(await replay.text(), answer)
    }
    const created = await call(after, oldKey, '/v1/pets', {
      method: 'POST',
      body: '{"name":"first on PostgreSQL","categoryId":1}',
    })
    assert.equal(created.status, 201)
    assert.ok(JSON.parse(await created.text()).id > highest, 'the next id is above the highest copied')
    await stop(after)
    assert.equal(
      (await runCli(['keys', 'list', '--json'], { DATABASE_URL: url }, cwd)).stdout,
      keysOnSqlite,
      'keys, revocations, counts',
    )
  })

  test('when a copy stopped partway is served (before the run that finishes it), then its start warns of the unfinished copy and a create gets an id above every source pet, never a 500 on an id a copied pet holds; once finished, no warning', {
    timeout: 120_000,
  }, async (t) => {
    const { cwd, sqlite, oldKey } = await seededSource(t, 2500)
    const url = await (await sharedPostgres()).createDatabase()
    const stopped = await runCli(
      ['copy', '--from', sqlite, '--to', url, '--chunk-size', '1000', '--max-chunks', '1'],
      {},
      cwd,
    )
    assert.equal(stopped.status, 3, stopped.stderr)

    const partial = await serve(t, { DATABASE_URL: url }, cwd)
    const created = await call(partial, oldKey, '/v1/pets', {
      method: 'POST',
      body: '{"name":"on a partial copy","categoryId":1}',
    })
    const body = await created.text()
    assert.equal(created.status, 201, body)
    assert.ok(JSON.parse(body).id > 2500, `id ${JSON.parse(body).id}, one a source pet holds`)
    await stop(partial)
    const unfinished = (server: ServeProcess) =>
      logLines(server).some((line) => line.level === 40 && /unfinished copy/.test(String(line.msg)))
    assert.ok(unfinished(partial), `the start warned of the unfinished copy:\n${partial.output()}`)
    const finished = await runCli(['copy', '--from', sqlite, '--to', url, '--chunk-size', '1000'], {}, cwd)
    assert.equal(finished.status, 0, finished.stderr)
    const whole = await serve(t, { DATABASE_URL: url }, cwd)
    await stop(whole)
    assert.equal(unfinished(whole), false, whole.output())
  })

  test("when the source serves creates while it is copied, then the target's ids come after every pet copied: a create on it gets a new id, never one a copied pet holds", {
    timeout: 120_000,
  }, async (t) => {
    const { cwd, sqlite, oldKey } = await seededSource(t, 2500)
    const source = await serve(t, { DATABASE_URL: sqlite }, cwd)
    const url = await (await sharedPostgres()).createDatabase()
    // Small chunks, so the copy takes its time; the source takes creates until it ends, the ids past
    // the highest there was when the copy began, and those the walk reaches are copied too.
    const copying = runCli(['copy', '--from', sqlite, '--to', url, '--chunk-size', '10'], {}, cwd)
    let copyEnded = false
    void copying.finally(() => {
      copyEnded = true
    })
    let createdMeanwhile = 0
    while (!copyEnded) {
      const created = await call(source, oldKey, '/v1/pets', {
        method: 'POST',
        body: '{"name":"during the copy","categoryId":1}',
      })
      if (created.status === 201) createdMeanwhile++
      await created.arrayBuffer()
    }
    const copied = await copying
    assert.equal(copied.status, 0, copied.stderr)
    assert.ok(createdMeanwhile > 0, 'no create landed during the copy')
    await stop(source)
    const [highest] = await postgresSql(url, 'SELECT max(id)::text AS id FROM pets')
    const target = await serve(t, { DATABASE_URL: url }, cwd)
    const created = await call(target, oldKey, '/v1/pets', {
      method: 'POST',
      body: '{"name":"after the copy","categoryId":1}',
    })
    const body = await created.text()
    assert.equal(created.status, 201, body)
    assert.ok(BigInt(JSON.parse(body).id) > BigInt(String(highest?.id)), `id ${JSON.parse(body).id}`)
    t.diagnostic(
      `${createdMeanwhile} pets created on the source during the copy; the highest copied ${highest?.id}`,
    )
  })
})
