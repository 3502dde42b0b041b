import assert from 'node:assert/strict'
import {
  closeSync,
  mkdirSync,
  openSync,
  readdirSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
  writeSync,
} from 'node:fs'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { describe, test } from 'node:test'
import type { Migration } from '../src/store/shared/migration-plan.ts'
import { sqliteMigrations } from '../src/store/sqlite/sqlite-migrations.ts'
import { get } from './helpers/bearer-call.ts'
import { exitWithin, runCli, startServeProcess } from './helpers/cli-process.ts'
import { checkedFetch } from './helpers/conformance-fetch.ts'
import { temporaryDirectory } from './helpers/test-server.ts'

describe('petstore CLI: commands on a database', () => {
  test('when a command makes the database under a permissive umask, then data/ is 0700 and the database and its log 0600', async (t) => {
    const cwd = temporaryDirectory(t)
    const umask = process.umask(0o022)
    t.after(() => process.umask(umask))
    assert.equal((await runCli(['keys', 'create', '--name', 'ops'], {}, cwd)).status, 0)
    const modeOf = (path: string) => (statSync(join(cwd, path)).mode & 0o777).toString(8)
    assert.deepEqual([modeOf('data'), modeOf('data/petstore.db')], ['700', '600'])
    // A server's connection keeps the write-ahead log and its index open: they take the database's mode.
    const server = await startServeProcess({ PORT: '0' }, cwd)
    t.after(() => server.child.kill('SIGKILL'))
    assert.deepEqual(['data/petstore.db-wal', 'data/petstore.db-shm'].map(modeOf), ['600', '600'])
    server.child.kill('SIGTERM')
    await exitWithin(server)
    // Through a link to no file yet, the file made at its end is the database's owner's alone too.
    mkdirSync(join(cwd, 'linked'))
    symlinkSync('real.db', join(cwd, 'linked', 'petstore.db'))
    const linked = await runCli(['seed', '--count', '1'], { DATABASE_URL: 'sqlite:linked/petstore.db' }, cwd)
    assert.equal(linked.status, 0, linked.stderr)
    assert.equal(modeOf('linked/real.db'), '600')
    // A relative link read from where its directory really is (here, through a linked directory).
    mkdirSync(join(cwd, 'deep', 'real'), { recursive: true })
    mkdirSync(join(cwd, 'deep', 'db'))
    symlinkSync('deep/real', join(cwd, 'via'))
    symlinkSync('../db/real.db', join(cwd, 'deep', 'real', 'petstore.db'))
    const via = await runCli(['seed', '--count', '1'], { DATABASE_URL: 'sqlite:via/petstore.db' }, cwd)
    assert.equal(via.status, 0, via.stderr)
    assert.equal(modeOf('deep/db/real.db'), '600')
    assert.deepEqual(readdirSync(cwd).sort(), ['data', 'deep', 'linked', 'via'], 'nothing made beside')
  })

  test('when a database lacks one migration, then migrate applies it and says which', async (t) => {
    const cwd = temporaryDirectory(t)
    mkdirSync(join(cwd, 'data'))
    // A database at schema 1, as the migrator leaves one: the first migration and its record.
    const [first] = sqliteMigrations as [Migration]
    const db = new DatabaseSync(join(cwd, 'data', 'petstore.db'))
    db.exec(first.sql)
    db.exec(`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL,
      applied_at TEXT NOT NULL DEFAULT 'then', compatible_from INTEGER) STRICT`)
    db.prepare('INSERT INTO schema_migrations (version, name, compatible_from) VALUES (1, ?, 1)').run(
      first.name,
    )
    db.close()
    assert.equal((await runCli(['migrate'], {}, cwd)).stdout, 'applied migration 2; schema version 2\n')
  })

  test("when the database's schema is current but its schema_migrations lacks compatible_from (release 1.0.0 made it), then migrate adds the column and says so, not that nothing changed", async (t) => {
    const cwd = temporaryDirectory(t)
    assert.match((await runCli(['migrate'], {}, cwd)).stdout, /applied migrations 1, 2; schema version 2/)
    const db = new DatabaseSync(join(cwd, 'data', 'petstore.db'))
    db.exec('ALTER TABLE schema_migrations DROP COLUMN compatible_from')
    db.close()
    assert.equal(
      (await runCli(['migrate'], {}, cwd)).stdout,
      'no migration to apply (schema version 2); schema_migrations gained its compatible_from column (which releases each version works with)\n',
    )
    assert.equal((await runCli(['migrate'], {}, cwd)).stdout, 'database is up to date (schema version 2)\n')
  })

  test('when migrating twice, then the second run has nothing to do', async (t) => {
    const cwd = temporaryDirectory(t)
    assert.match((await runCli(['migrate'], {}, cwd)).stdout, /applied migrations 1, 2; schema version 2/)
    assert.match((await runCli(['migrate'], {}, cwd)).stdout, /database is up to date \(schema version 2\)/)
    assert.ok(statSync(join(cwd, 'data', 'petstore.db')).isFile(), 'the default store is ./data/petstore.db')
    // A newer release's migration that keeps this release working (a rollback): nothing to do either.
    const db = new DatabaseSync(join(cwd, 'data', 'petstore.db'))
    db.exec("INSERT INTO schema_migrations (version, name, compatible_from) VALUES (3, 'newer', 2)")
    db.close()
    assert.equal(
      (await runCli(['migrate'], {}, cwd)).stdout,
      "database schema version 3 is newer than this release's (2), and compatible with it: nothing to apply\n",
    )
  })

  test('when seeding 25 pets, then the API lists them with realistic names and mixed statuses; a seed without --count adds 100', async (t) => {
    const cwd = temporaryDirectory(t)
    const other = join(cwd, 'other')
    mkdirSync(other)
    assert.match((await runCli(['seed'], {}, other)).stdout, /added 100 pets/)
    const database = new DatabaseSync(join(other, 'data', 'petstore.db'), { readOnly: true })
    assert.deepEqual({ ...database.prepare('SELECT count(*) AS pets FROM pets').get() }, { pets: 100 })
    database.close()
    assert.match((await runCli(['seed', '--count', '25'], {}, cwd)).stdout, /added 25 pets/)
    const key = (await runCli(['keys', 'create', '--name', 'seed'], {}, cwd)).stdout.trim()
    const server = await startServeProcess({}, cwd)
    t.after(() => server.child.kill('SIGKILL'))
    const pets = JSON.parse((await get(server.origin, '/v1/pets?limit=100', key)).text)
    assert.equal(pets.length, 25)
    assert.ok(new Set(pets.map((pet: { status?: string }) => pet.status)).size >= 3)
    assert.match(pets[0].name, /^[A-Z][a-z]+ 1$/)
  })

  test('when `keys list` or `keys revoke` runs where no database is (the wrong directory), then it refuses, naming the path, and creates nothing', async (t) => {
    const cwd = temporaryDirectory(t)
    for (const args of [
      ['keys', 'list'],
      ['keys', 'revoke', 'ci'],
    ]) {
      const result = await runCli(args, {}, cwd)
      assert.equal(result.status, 1, args.join(' '))
      assert.equal(result.stdout, '')
      assert.equal(
        result.stderr,
        `petstore keys: no database at ${join(cwd, 'data', 'petstore.db')} (DATABASE_URL): run the command where the service runs, or set DATABASE_URL\n`,
      )
    }
    assert.deepEqual(readdirSync(cwd), [], 'no data directory, no database')
    // backup and restore say it the same way, with the path they looked at.
    const hint = '(DATABASE_URL): run the command where the service runs, or set DATABASE_URL\n'
    for (const [args, said] of [
      [
        ['backup', '--to', 'b.db'],
        `petstore backup: there is no database at ${join(cwd, 'data', 'petstore.db')} ${hint}`,
      ],
      [
        ['restore', '--from', 'b.db'],
        `petstore restore: ${join(cwd, 'data')} does not exist (DATABASE_URL): for a first restore, create it ` +
          `(mkdir -m 700 ${join(cwd, 'data')}); else run the command where the service runs, or set DATABASE_URL\n`,
      ],
    ] as const) {
      writeFileSync(join(cwd, 'b.db'), '')
      const result = await runCli([...args], {}, cwd)
      assert.deepEqual([result.status, result.stderr], [1, said], args.join(' '))
      rmSync(join(cwd, 'b.db'))
    }
  })

  test('when `keys`, `seed` or `migrate` runs on sqlite::memory:, then it refuses in one line, as what it made would be gone at its exit', async (t) => {
    const cwd = temporaryDirectory(t)
    for (const args of [
      ['keys', 'create', '--name', 'x'],
      ['keys', 'list'],
      ['seed', '--count', '3'],
      ['migrate'],
    ]) {
      const result = await runCli(args, { DATABASE_URL: 'sqlite::memory:' }, cwd)
      const name = args[0]
      assert.deepEqual(
        [result.status, result.stdout, result.stderr],
        [
          1,
          '',
          `petstore ${name}: DATABASE_URL is sqlite::memory:, a store no other process can open, gone when this command exits: run it on the service's database${name === 'keys' ? '; give a service on sqlite::memory: its keys in API_KEYS' : ''}\n`,
        ],
        args.join(' '),
      )
    }
  })

  test('when `keys create`, `seed` or `migrate` makes a new database, then stderr says so with its path; on an existing one it says nothing of it', async (t) => {
    const cwd = temporaryDirectory(t)
    const notice = `petstore keys: no database was at ${join(cwd, 'data', 'petstore.db')}; created a new one\n`
    const first = await runCli(['keys', 'create', '--name', 'ci'], {}, cwd)
    assert.equal(first.status, 0)
    assert.match(first.stdout, /^psk_\S+\n$/)
    assert.ok(first.stderr.startsWith(notice), first.stderr)
    const second = await runCli(['keys', 'create', '--name', 'deploy'], {}, cwd)
    assert.doesNotMatch(second.stderr, /no database was at/)
    const elsewhere = temporaryDirectory(t)
    const seed = await runCli(['seed', '--count', '1'], {}, elsewhere)
    assert.equal(seed.stdout, 'added 1 pet\n')
    assert.equal(seed.stderr, notice.replace('keys', 'seed').replace(cwd, elsewhere))
    // A pipeline's migrate run from the wrong directory made an empty database there, and said nothing.
    const third = temporaryDirectory(t)
    const migrated = await runCli(['migrate'], {}, third)
    assert.equal(migrated.status, 0)
    assert.match(migrated.stdout, /^applied migrations 1, /)
    assert.equal(migrated.stderr, notice.replace('keys', 'migrate').replace(cwd, third))
    assert.equal((await runCli(['migrate'], {}, third)).stderr, '')
  })

  test('when the store reports a fault during a command (a damaged database), then it says so on stderr in one line with what to do, and stdout holds only results', async (t) => {
    const cwd = temporaryDirectory(t)
    assert.equal((await runCli(['seed', '--count', '5'], {}, cwd)).status, 0)
    const path = join(cwd, 'data', 'petstore.db')
    const db = new DatabaseSync(path)
    const { rootpage, pageSize } = db
      .prepare(
        "SELECT rootpage, (SELECT page_size FROM pragma_page_size) AS pageSize FROM sqlite_schema WHERE name = 'pets'",
      )
      .get() as { rootpage: number; pageSize: number }
    db.close()
    // The pets table's root page loses its type: every read of a pet finds the file malformed.
    const file = openSync(path, 'r+')
    writeSync(file, Buffer.from([0xff]), 0, 1, (rootpage - 1) * pageSize)
    closeSync(file)
    const seed = await runCli(['seed', '--count', '5'], {}, cwd)
    assert.equal(seed.status, 1)
    assert.equal(seed.stdout, '', 'no log line among the results')
    assert.match(
      seed.stderr,
      /^petstore seed: the database file is damaged: [^\n]*; restore the database from a backup \(petstore restore\)\n$/,
    )
  })

  test('when the server is stopped with SIGTERM and started again, then the data is still there', async (t) => {
    const cwd = temporaryDirectory(t)
    const key = (await runCli(['keys', 'create', '--name', 'restart'], {}, cwd)).stdout.trim()
    const first = await startServeProcess({}, cwd)
    t.after(() => first.child.kill('SIGKILL'))
    const response = await checkedFetch(first.origin, '/v1/pets', {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: '{"name":"Persistent","categoryId":9223372036854775807}',
    })
    const created = await response.text()
    assert.equal(response.status, 201)
    first.child.kill('SIGTERM')
    assert.equal(await exitWithin(first), 0)

    const second = await startServeProcess({}, cwd)
    t.after(() => second.child.kill('SIGKILL'))
    const id = /"id":(\d+)/.exec(created)?.[1]
    assert.equal((await get(second.origin, `/v1/pets/${id}`, key)).text, created)
  })
})
