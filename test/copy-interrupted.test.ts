import assert from 'node:assert/strict'
import { type ChildProcess, spawn } from 'node:child_process'
import { join } from 'node:path'
import { describe, type TestContext, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import { generateApiKey } from '../src/auth/api-key.ts'
import { SqliteStore } from '../src/store/sqlite/sqlite-store.ts'
import { waitUntil, within } from './helpers/bounded-wait.ts'
import { CLI, runCli, stop } from './helpers/cli-process.ts'
import { postgresLack, sharedPostgres } from './helpers/postgres-server.ts'
import { newSetTestLog, startWriters } from './helpers/set-test.ts'
import { call, seedStore, serve, storeContents } from './helpers/store-copy-fixtures.ts'
import { suiteNeeding } from './helpers/suite-requirements.ts'
import { temporaryDirectory } from './helpers/test-server.ts'

// Small chunks, so the copy is many transactions long and a kill lands between two of them.
const CHUNK = 100

async function petsIn(t: TestContext, url: string) {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  t.after(() => client.end())
  const count = async () => Number((await client.query('SELECT count(*) AS n FROM pets')).rows[0].n)
  // A COMMIT the killed copy sent before it died still commits: its session ends only after running it.
  const othersGone = async () =>
    Number(
      (
        await client.query(
          `SELECT count(*) AS n FROM pg_stat_activity
           WHERE datname = current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid()`,
        )
      ).rows[0].n,
    ) === 0
  // The target database exists before the copy migrates it: counted once its pets table is there.
  const firstChunk = () =>
    waitUntil(
      () =>
        count().then(
          (n) => n > 0,
          () => false,
        ),
      'the copy wrote its first chunk of pets',
      {
        timeoutMs: 120_000,
      },
    )
  return { count, othersGone, firstChunk }
}

/** A SQLite source with `pets` pets, two keys (one revoked) and three Idempotency-Key records. */
async function sourceStore(t: TestContext, cwd: string, pets: number) {
  const keys = { oldKey: generateApiKey(), revokedKey: generateApiKey() }
  const path = join(cwd, 'source.db')
  await seedStore(new SqliteStore({ path, busyTimeoutMs: 5000 }), pets, keys)
  const sqlite = `sqlite:${path}`
  const server = await serve(t, { DATABASE_URL: sqlite }, cwd)
  for (let i = 0; i < 3; i++) {
    const response = await call(server, keys.oldKey, '/v1/pets', {
      method: 'POST',
      body: `{"name":"retried ${i}","categoryId":9223372036854775807}`,
      headers: { 'idempotency-key': `move-${i}` },
    })
    assert.equal(response.status, 201)
  }
  return { sqlite, server, ...keys }
}

/** A stopped SQLite source of `pets` pets, an empty PostgreSQL database, and the copy between them. */
async function copyToMake(t: TestContext, cwd: string, pets: number) {
  const { sqlite, server, oldKey } = await sourceStore(t, cwd, pets)
  await stop(server)
  const url = await (await sharedPostgres()).createDatabase()
  return { sqlite, oldKey, url, copy: ['copy', '--from', sqlite, '--to', url, '--chunk-size', String(CHUNK)] }
}

/** The target holds exactly the source, and its next create gets an id above the highest copied. */
async function assertCopied(t: TestContext, cwd: string, sqlite: string, url: string, oldKey: string) {
  const [source, target] = await Promise.all([storeContents(sqlite), storeContents(url)])
  assert.ok(source.secret, 'the source has a cursor secret')
  assert.equal(target.secret, source.secret, 'the cursor secret')
  assert.deepEqual(target.keys, source.keys, 'keys: hashes, names, revocations, counts')
  assert.deepEqual(target.idempotencyRecords, source.idempotencyRecords, 'Idempotency-Key records')
  assert.equal(target.pets.length, source.pets.length, 'as many pets')
  assert.deepEqual(target.pets, source.pets, 'every pet, field for field')
  const server = await serve(t, { DATABASE_URL: url }, cwd)
  const created = await call(server, oldKey, '/v1/pets', {
    method: 'POST',
    body: '{"name":"next","categoryId":1}',
  })
  assert.equal(created.status, 201)
  const id = BigInt(/"id":(\d+)/.exec(await created.text())?.[1] ?? 0)
  assert.ok(id > source.highestPetId, `the next id ${id} is above ${source.highestPetId}`)
  await stop(server)
}

describe('copy interrupted and re-run', suiteNeeding('the copy suite', postgresLack()), () => {
  for (const signal of ['SIGKILL', 'SIGINT'] as const) {
    test(`when a copy is stopped with ${signal} mid-way and run again, then the target holds every pet, key, record and the secret, and the sequence is past the highest id`, {
      timeout: 300_000,
    }, async (t) => {
      const PETS = 50_000
      const cwd = temporaryDirectory(t)
      const { sqlite, oldKey, url, copy } = await copyToMake(t, cwd, PETS)

      const child = spawn(process.execPath, [CLI, ...copy], {
        cwd,
        stdio: ['ignore', 'ignore', 'pipe'],
        env: { PATH: process.env.PATH ?? '' },
      })
      let stderr = ''
      child.stderr?.on('data', (chunk) => {
        stderr += chunk
      })
      const exited = new Promise<unknown>((resolve) =>
        child.on('close', (code, signal) => resolve(code ?? signal)),
      )
      t.after(() => child.kill('SIGKILL'))
      const { count, othersGone, firstChunk } = await petsIn(t, url).catch(async (error) => {
        child.kill('SIGKILL')
        throw error
      })
      await firstChunk()
      child.kill(signal)
      const ended = await within(exited, 10_000, `the copy did not exit after ${signal}`)
      if (signal === 'SIGKILL') assert.equal(ended, 'SIGKILL', 'the copy was still running when killed')
      else {
        // Stopped by the operator: it says what is left and how to finish, with the shell's code for it.
        assert.equal(ended, 130, stderr)
        // Progress lines may come first on a slow machine: the stop's line is the last.
        assert.equal(
          stderr.trimEnd().split('\n').at(-1),
          'petstore copy: stopped by SIGINT before the end; the target holds whole chunks: run the same command again to finish',
        )
      }
      await waitUntil(othersGone, "the killed copy's sessions ended", { timeoutMs: 10_000 })
      const held = await count()
      assert.ok(held > 0 && held < PETS, `the kill came mid-copy (${held} of ${PETS + 3} pets there)`)
      assert.equal(held % CHUNK, 0, `whole chunks only (${held} pets)`)

      const resumed = await runCli(copy, {}, cwd)
      assert.equal(resumed.status, 0, resumed.stderr)
      assert.match(
        resumed.stdout,
        new RegExp(
          `^copied ${PETS + 3 - held} pets, 0 API keys \\(\\d+ already there, brought up to date\\), 3 idempotency records in [\\d.]+ s;`,
        ),
      )
      await assertCopied(t, cwd, sqlite, url, oldKey)
    })
  }

  test("when the target drops the copy's connection mid-way (PostgreSQL restarted, a network cut), then the copy exits 1 with one line naming --to and saying to run it again, and a re-run finishes it", {
    timeout: 300_000,
  }, async (t) => {
    const PETS = 20_000
    const cwd = temporaryDirectory(t)
    const { sqlite, oldKey, url, copy } = await copyToMake(t, cwd, PETS)
    const { count, firstChunk } = await petsIn(t, url)
    const admin = new pg.Client({ connectionString: url })
    await admin.connect()
    t.after(() => admin.end())
    // The copy's sessions ended by the server, as a restart or a network cut ends them; again until the
    // copy has met it (one ended while idle between chunks is replaced unseen).
    const cut = async (child: ChildProcess) => {
      await firstChunk()
      while (child.exitCode === null && child.signalCode === null) {
        await admin.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity
          WHERE datname = current_database() AND application_name = 'petstore'`)
        await sleep(50)
      }
    }
    let cutting: Promise<void> = Promise.resolve()
    const lost = await runCli(copy, {}, cwd, {
      timeoutMs: 120_000,
      started: (child) => {
        cutting = cut(child)
      },
    })
    await cutting
    assert.equal(lost.status, 1, lost.stderr)
    assert.match(
      lost.stderr.trimEnd().split('\n').at(-1) ?? '',
      /^petstore copy: --to \(the target\): the database .+; the target holds whole chunks: run the same command again once it answers$/,
    )
    assert.ok((await count()) < PETS, 'cut mid-way')
    const resumed = await runCli(copy, {}, cwd)
    assert.equal(resumed.status, 0, resumed.stderr)
    await assertCopied(t, cwd, sqlite, url, oldKey)
  })

  test('when a copy runs while the SQLite service takes creates, and runs again after the service stopped, then the target holds every pet the service acknowledged, and later revocations', {
    timeout: 300_000,
  }, async (t) => {
    const cwd = temporaryDirectory(t)
    const { sqlite, server, oldKey } = await sourceStore(t, cwd, 20_000)
    assert.equal(
      (await runCli(['keys', 'create', '--name', 'late'], { DATABASE_URL: sqlite }, cwd)).status,
      0,
    )
    const url = await (await sharedPostgres()).createDatabase()
    const copy = ['copy', '--from', sqlite, '--to', url, '--chunk-size', String(CHUNK)]

    const log = newSetTestLog()
    const writers = startWriters({
      count: 4,
      log,
      origin: () => server.origin,
      key: oldKey,
      timeoutMs: 30_000,
    })
    t.after(() => writers.stop())
    await waitUntil(() => log.ok.size > 0, 'a create was acknowledged before the copy', { timeoutMs: 60_000 })
    const first = await runCli(copy, {}, cwd, { timeoutMs: 120_000 })
    assert.equal(first.status, 0, first.stderr)
    // Creates acknowledged after the first run ended are what the second run is for.
    const acknowledgedByThen = log.ok.size
    await waitUntil(() => log.ok.size > acknowledgedByThen, 'a create was acknowledged after the copy', {
      timeoutMs: 60_000,
    })
    assert.equal((await runCli(['keys', 'revoke', 'late'], { DATABASE_URL: sqlite }, cwd)).status, 0)
    await writers.stop()
    await stop(server)
    assert.equal(log.unknown.size, 0, 'every create was answered')

    const second = await runCli(copy, {}, cwd)
    assert.equal(second.status, 0, second.stderr)
    assert.match(
      second.stdout,
      /^copied [1-9]\d* pets, 0 API keys \([1-9]\d* already there, brought up to date\), \d+ idempotency records/,
    )
    await assertCopied(t, cwd, sqlite, url, oldKey)
    const target = await storeContents(url)
    const names = new Map(target.pets.map((pet) => [String(pet.id), pet.name]))
    for (const [name, body] of log.ok) {
      const id = /"id":(\d+)/.exec(body)?.[1] as string
      assert.equal(names.get(id), name, `acknowledged pet ${id} (${name}) is on the target`)
    }
    assert.ok(target.keys.find((key) => key.name === 'late')?.revoked_at, 'the later revocation carried over')
  })
})
