import assert from 'node:assert/strict'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { describe, type TestContext, test } from 'node:test'
import pg from 'pg'
import { generateApiKey } from '../src/auth/api-key.ts'
import { SqliteStore } from '../src/store/sqlite/sqlite-store.ts'
import { runCli } from './helpers/cli-process.ts'
import { postgresLack, sharedPostgres } from './helpers/postgres-server.ts'
import { seedStore, storeContents } from './helpers/store-copy-fixtures.ts'
import { suiteNeeding } from './helpers/suite-requirements.ts'
import { temporaryDirectory } from './helpers/test-server.ts'

const SOURCE_PETS = 450
// The target's own pets start above this id, far past the source's.
const HIGH_ID = 1_000_000

const sqliteStore = (url: string) =>
  new SqliteStore({ path: url.slice('sqlite:'.length), busyTimeoutMs: 5000 })

/** A SQLite source with pets, two keys (ids 1 and 2) and a cursor secret, as a served store has. */
async function sourceStore(cwd: string): Promise<string> {
  const url = `sqlite:${join(cwd, 'source.db')}`
  await seedStore(sqliteStore(url), SOURCE_PETS, { oldKey: generateApiKey(), revokedKey: generateApiKey() })
  const store = sqliteStore(url)
  await store.serviceSecret()
  await store.close()
  return url
}

async function newTarget(engine: 'sqlite' | 'postgres', cwd: string): Promise<string> {
  return engine === 'sqlite' ? `sqlite:${join(cwd, 'target.db')}` : (await sharedPostgres()).createDatabase()
}

/** Makes the target's next pet id `HIGH_ID + 1`, as a store that has given out that many would. */
async function raisePetIds(t: TestContext, url: string, cwd: string): Promise<void> {
  assert.equal((await runCli(['migrate'], { DATABASE_URL: url }, cwd)).status, 0)
  if (url.startsWith('sqlite:')) {
    const db = new DatabaseSync(url.slice('sqlite:'.length))
    t.after(() => db.isOpen && db.close())
    db.exec(`INSERT INTO sqlite_sequence (name, seq) VALUES ('pets', ${HIGH_ID})`)
    db.close()
    return
  }
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await client.query(`SELECT setval(pg_get_serial_sequence('pets', 'id'), ${HIGH_ID})`)
  } finally {
    await client.end()
  }
}

function copy(source: string, target: string, cwd: string, ...more: string[]) {
  return runCli(['copy', '--from', source, '--to', target, '--chunk-size', '100', ...more], {}, cwd)
}

/** The target's settings rows (its cursor secret, and the marks a copy leaves), by name. */
async function settingsOf(url: string): Promise<Record<string, string>> {
  const sql = 'SELECT name, value FROM service_settings ORDER BY name'
  if (url.startsWith('sqlite:')) {
    const db = new DatabaseSync(url.slice('sqlite:'.length), { readOnly: true })
    try {
      return Object.fromEntries(
        db
          .prepare(sql)
          .all()
          .map((row) => [row.name, row.value]),
      )
    } finally {
      db.close()
    }
  }
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return Object.fromEntries((await client.query(sql)).rows.map((row) => [row.name, row.value]))
  } finally {
    await client.end()
  }
}

/**
 * `copy --into-non-empty` exits 1 with `line` alone, and the target is as it was before, its settings
 * too: no mark of a copy, which its services would take for one under way or finished.
 */
async function assertRefused(source: string, target: string, cwd: string, line: string): Promise<void> {
  const before = { contents: await storeContents(target), settings: await settingsOf(target) }
  const refused = await copy(source, target, cwd, '--into-non-empty')
  assert.deepEqual([refused.status, refused.stdout, refused.stderr], [1, '', `petstore copy: ${line}\n`])
  const after = { contents: await storeContents(target), settings: await settingsOf(target) }
  assert.deepEqual(after, before, 'the target is as it was')
}

describe('copy into a non-empty target', suiteNeeding('the copy suite', postgresLack()), () => {
  for (const engine of ['sqlite', 'postgres'] as const) {
    test(`when the ${engine} target holds pets of its own at ids the source's pets have, then copy --into-non-empty refuses, naming them, and writes nothing`, {
      timeout: 120_000,
    }, async (t) => {
      const cwd = temporaryDirectory(t)
      const source = await sourceStore(cwd)
      const target = await newTarget(engine, cwd)
      assert.equal((await runCli(['seed', '--count', '5'], { DATABASE_URL: target }, cwd)).status, 0)
      assert.deepEqual(
        (await storeContents(target)).pets.map((pet) => pet.id),
        [1n, 2n, 3n, 4n, 5n],
      )
      await assertRefused(
        source,
        target,
        cwd,
        '5 pets of the source have ids the target holds with other content (ids 1, 2, 3, 4, 5): ' +
          'stores whose ids collide cannot be merged; copy into an empty target',
      )
    })

    test(`when the ${engine} target holds an API key of its own at the id of a source key, then copy --into-non-empty refuses, naming it, and writes nothing`, {
      timeout: 120_000,
    }, async (t) => {
      const cwd = temporaryDirectory(t)
      const source = await sourceStore(cwd)
      const target = await newTarget(engine, cwd)
      assert.equal(
        (await runCli(['keys', 'create', '--name', 'someone'], { DATABASE_URL: target }, cwd)).status,
        0,
      )
      assert.deepEqual(
        (await storeContents(target)).keys.map((key) => key.id),
        [1n],
      )
      await assertRefused(
        source,
        target,
        cwd,
        "1 API key of the source collides with the target's by id or name (id 1): " +
          'stores whose ids collide cannot be merged; a target with API keys of its own takes none of the ' +
          "source's; copy into one no service has started on",
      )
    })

    test(`when a copy --into-non-empty into a ${engine} target with pets of its own at higher ids is stopped and run again, then every source pet gets there, also one created after`, {
      timeout: 120_000,
    }, async (t) => {
      const cwd = temporaryDirectory(t)
      const source = await sourceStore(cwd)
      const target = await newTarget(engine, cwd)
      await raisePetIds(t, target, cwd)
      assert.equal((await runCli(['seed', '--count', '20'], { DATABASE_URL: target }, cwd)).status, 0)
      const own = (await storeContents(target)).pets
      assert.equal(own[0]?.id, BigInt(HIGH_ID + 1))

      const stopped = await copy(source, target, cwd, '--into-non-empty', '--max-chunks', '1')
      assert.equal(stopped.status, 3, stopped.stderr)
      assert.match(
        stopped.stdout,
        /^copied 100 pets, 2 API keys, 0 idempotency records in [\d.]+ s, then stopped/,
      )
      const resumed = await copy(source, target, cwd)
      assert.equal(resumed.status, 0, resumed.stderr)
      // The target gave out ids far above the source's: its next id comes after those, as the line says.
      assert.match(
        resumed.stdout,
        new RegExp(
          `^copied ${SOURCE_PETS - 100} pets, 0 API keys \\(2 already there, brought up to date\\),.*; the next pet id will be above ${HIGH_ID + 20}\\n$`,
        ),
      )
      let [from, to] = await Promise.all([storeContents(source), storeContents(target)])
      assert.deepEqual(to.pets, [...from.pets, ...own], "every source pet, and the target's own")
      assert.deepEqual(to.keys, from.keys)
      assert.equal(to.secret, from.secret)

      const store = sqliteStore(source)
      await store.createPet({ pet: { name: 'created after the copy', categoryId: 1n } })
      await store.close()
      const again = await copy(source, target, cwd)
      assert.equal(again.status, 0, again.stderr)
      assert.match(again.stdout, /^copied 1 pet, 0 API keys \(2 already there, brought up to date\),/)
      ;[from, to] = await Promise.all([storeContents(source), storeContents(target)])
      assert.deepEqual(to.pets, [...from.pets, ...own], 'the later pet too')
    })
  }

  test("when the source never signed a cursor (no service or command ever opened it) and the target did, then the copy keeps the target's secret: the cursors it gave out stay valid", async (t) => {
    const cwd = temporaryDirectory(t)
    const source = `sqlite:${join(cwd, 'source.db')}`
    // Made by the store alone: every command of the service makes the secret as it migrates.
    const made = sqliteStore(source)
    await made.migrate()
    await made.createPet({ pet: { name: 'Rex', categoryId: 1n } })
    await made.close()
    assert.equal((await storeContents(source)).secret, undefined)
    const target = await newTarget('sqlite', cwd)
    assert.equal((await runCli(['migrate'], { DATABASE_URL: target }, cwd)).status, 0)
    const store = sqliteStore(target)
    const signing = await store.serviceSecret()
    await store.close()

    const copied = await copy(source, target, cwd)
    assert.equal(copied.status, 0, copied.stderr)
    assert.equal((await storeContents(target)).secret, signing)
  })
})
