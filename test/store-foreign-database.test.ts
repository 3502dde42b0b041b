import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { describe, test } from 'node:test'
import { runCli } from './helpers/cli-process.ts'
import { sharedPostgres } from './helpers/postgres-server.ts'
import { engineSuiteOptions, postgresEngine, postgresSql } from './helpers/store-engines.ts'
import { temporaryDirectory } from './helpers/test-server.ts'

// Every command that opens the store, serve among them (PORT 0: it would listen, were it let through).
const COMMANDS = [['migrate'], ['keys', 'list'], ['keys', 'create', '--name', 'web'], ['serve']]
const REFUSAL =
  /it is not a Pet Store database: it holds other tables \(orders, users\) and no schema_migrations/
// golang-migrate's bookkeeping, of the same name as the service's (Rails', Ecto's: version and one other).
const OTHER_TOOLS_BOOKKEEPING =
  'CREATE TABLE schema_migrations (version bigint PRIMARY KEY, dirty boolean NOT NULL)'
const OTHER_TOOLS_REFUSAL =
  /it is not a Pet Store database: its schema_migrations \(version, dirty\) is another tool's, not the service's/

/** The tables of the PostgreSQL database at `url` in schema public, by name. */
async function publicTables(url: string): Promise<unknown[]> {
  const tables = "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1"
  return (await postgresSql(url, tables)).map((row) => row.table_name)
}

async function refusedEverywhere(env: Record<string, string>, cwd: string, refusal = REFUSAL): Promise<void> {
  for (const args of COMMANDS) {
    const result = await runCli(args, { PORT: '0', ...env }, cwd)
    assert.equal(result.status, 1, `${args.join(' ')}: ${result.stderr}`)
    assert.match(result.stderr, refusal, args.join(' '))
  }
}

describe("a DATABASE_URL that points at another application's database", () => {
  test('when a SQLite file holds other tables and no schema_migrations, then every command refuses it and leaves it byte for byte', async (t) => {
    const cwd = temporaryDirectory(t)
    const path = join(cwd, 'other-app.db')
    const db = new DatabaseSync(path)
    db.exec('CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT); CREATE TABLE orders (id INTEGER)')
    db.close()
    const digest = () => createHash('sha256').update(readFileSync(path)).digest('hex')
    const before = digest()
    await refusedEverywhere({ DATABASE_URL: `sqlite:${path}` }, cwd)
    assert.equal(digest(), before, 'no table added, no WAL mode')
  })

  test("when a SQLite file holds another migration tool's schema_migrations, then every command refuses it and leaves it byte for byte", async (t) => {
    const cwd = temporaryDirectory(t)
    const path = join(cwd, 'other-app.db')
    const db = new DatabaseSync(path)
    db.exec(
      `${OTHER_TOOLS_BOOKKEEPING}; INSERT INTO schema_migrations VALUES (2, 0); CREATE TABLE users (id INTEGER)`,
    )
    db.close()
    const digest = () => createHash('sha256').update(readFileSync(path)).digest('hex')
    const before = digest()
    await refusedEverywhere({ DATABASE_URL: `sqlite:${path}` }, cwd, OTHER_TOOLS_REFUSAL)
    assert.equal(digest(), before, 'no column, table or row added, no WAL mode')
  })

  test('when the SQLite file holds nothing (an empty file), then keys list refuses it, naming it, and makes no table; keys create makes the tables and says so on stderr', async (t) => {
    const cwd = temporaryDirectory(t)
    const path = join(cwd, 'empty.db')
    writeFileSync(path, '')
    const env = { DATABASE_URL: `sqlite:${path}` }
    const listed = await runCli(['keys', 'list'], env, cwd)
    assert.deepEqual(
      [listed.status, listed.stderr],
      [
        1,
        `petstore keys: no Pet Store tables in ${path} (DATABASE_URL): run the command against the service's database, or set DATABASE_URL ("petstore migrate" makes them)\n`,
      ],
    )
    const tables = new DatabaseSync(path)
    assert.deepEqual(tables.prepare('SELECT name FROM sqlite_schema').all(), [], 'no table made')
    tables.close()
    const created = await runCli(['keys', 'create', '--name', 'web'], env, cwd)
    assert.equal(created.status, 0, created.stderr)
    assert.ok(created.stderr.startsWith(`petstore keys: ${path}, held no Pet Store tables; made them\n`))
  })

  test("when DATABASE_URL names another application's SQLite file, one with another tool's schema_migrations, or an empty file, then backup refuses at once in one line naming it, makes no backup, and leaves it byte for byte", async (t) => {
    const cwd = temporaryDirectory(t)
    for (const [name, tables] of [
      [
        'other-app.db',
        'CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT); CREATE TABLE orders (id INTEGER)',
      ],
      ['other-tool.db', `${OTHER_TOOLS_BOOKKEEPING}; INSERT INTO schema_migrations VALUES (2, 0)`],
      ['empty.db', ''],
    ] as const) {
      const path = join(cwd, name)
      const db = new DatabaseSync(path)
      db.exec(tables)
      db.close()
      const before = readFileSync(path)
      const refused = await runCli(['backup', '--to', 'b.db'], { DATABASE_URL: `sqlite:${path}` }, cwd)
      assert.deepEqual(
        [refused.status, refused.stderr],
        [
          1,
          `petstore backup: no Pet Store tables in ${path} (DATABASE_URL): run the command where the ` +
            'service runs, or set DATABASE_URL\n',
        ],
        name,
      )
      assert.ok(readFileSync(path).equals(before), `${name} left byte for byte`)
    }
    assert.deepEqual(readdirSync(cwd).sort(), ['empty.db', 'other-app.db', 'other-tool.db'], 'no backup made')
  })

  describe('on PostgreSQL', engineSuiteOptions(postgresEngine), () => {
    test("when the schema holds another migration tool's schema_migrations, then every command refuses it and changes nothing", async (t) => {
      const url = await (await sharedPostgres()).createDatabase()
      await postgresSql(url, `${OTHER_TOOLS_BOOKKEEPING}; INSERT INTO schema_migrations VALUES (2, false)`)
      await refusedEverywhere({ DATABASE_URL: url }, temporaryDirectory(t), OTHER_TOOLS_REFUSAL)
      const columns = await postgresSql(
        url,
        "SELECT column_name FROM information_schema.columns WHERE table_name = 'schema_migrations' ORDER BY 1",
      )
      assert.deepEqual(
        columns.map((row) => row.column_name),
        ['dirty', 'version'],
      )
      assert.deepEqual(await publicTables(url), ['schema_migrations'])
    })

    test('when the schema holds other tables and no schema_migrations, then every command refuses it and adds nothing', async (t) => {
      const url = await (await sharedPostgres()).createDatabase()
      await postgresSql(
        url,
        'CREATE TABLE users (id int PRIMARY KEY, name text); CREATE TABLE orders (id int)',
      )
      await refusedEverywhere({ DATABASE_URL: url }, temporaryDirectory(t))
      assert.deepEqual(await publicTables(url), ['orders', 'users'])
    })

    test("when the other application's tables are named like the driver's words for a lost connection (session_timeouts, terminated_jobs), then migrate's refusal still names them, not an unreachable database", async (t) => {
      const url = await (await sharedPostgres()).createDatabase()
      await postgresSql(url, 'CREATE TABLE session_timeouts (id int); CREATE TABLE terminated_jobs (id int)')
      const result = await runCli(['migrate'], { DATABASE_URL: url }, temporaryDirectory(t))
      assert.equal(result.status, 1, result.stderr)
      assert.match(
        result.stderr,
        /it is not a Pet Store database: it holds other tables \(session_timeouts, terminated_jobs\)/,
      )
      assert.doesNotMatch(result.stderr, /unreachable/)
    })

    test('when the schema holds nothing (a new database, or the wrong one), then keys list and keys revoke refuse it, naming it, and make nothing; keys create and seed make the tables and say so on stderr', async (t) => {
      const url = await (await sharedPostgres()).createDatabase()
      const database = new URL(url).pathname.slice(1)
      const cwd = temporaryDirectory(t)
      const absent = `no Pet Store tables in database ${database}, schema public (DATABASE_URL): run the command against the service's database, or set DATABASE_URL ("petstore migrate" makes them)`
      for (const args of [
        ['keys', 'list'],
        ['keys', 'revoke', 'web'],
      ]) {
        const refused = await runCli(args, { DATABASE_URL: url }, cwd)
        assert.deepEqual([refused.status, refused.stderr], [1, `petstore keys: ${absent}\n`], args.join(' '))
      }
      assert.deepEqual(await publicTables(url), [], 'nothing made')
      const made = `petstore keys: database ${database}, schema public, held no Pet Store tables; made them\n`
      const created = await runCli(['keys', 'create', '--name', 'web'], { DATABASE_URL: url }, cwd)
      assert.equal(created.status, 0, created.stderr)
      assert.ok(created.stderr.startsWith(made), created.stderr)
      const again = await runCli(['keys', 'create', '--name', 'ci'], { DATABASE_URL: url }, cwd)
      assert.equal(again.status, 0, again.stderr)
      assert.doesNotMatch(again.stderr, /held no Pet Store tables/, 'said once, when made')
      const seeded = await runCli(
        ['seed', '--count', '1'],
        { DATABASE_URL: await (await sharedPostgres()).createDatabase() },
        cwd,
      )
      assert.equal(seeded.status, 0, seeded.stderr)
      assert.match(
        seeded.stderr,
        /^petstore seed: database \S+, schema public, held no Pet Store tables; made them\n$/,
      )
    })

    test("when the schema holds only views and an extension's objects, then it is no other application's: migrate makes the service's tables", async (t) => {
      const url = await (await sharedPostgres()).createDatabase()
      const database = new URL(url).pathname.slice(1)
      // In a schema of its own whose name needs quoting; pg_trgm's functions and types there, and a view as
      // pg_stat_statements makes: as in many a new database.
      await postgresSql(
        url,
        `CREATE SCHEMA "Pet Store"; ALTER DATABASE "${database}" SET search_path = "Pet Store"`,
      )
      await postgresSql(
        url,
        'CREATE EXTENSION IF NOT EXISTS pg_trgm; CREATE VIEW pg_stat_statements AS SELECT 1 AS x',
      )
      const migrated = await runCli(['migrate'], { DATABASE_URL: url }, temporaryDirectory(t))
      assert.equal(migrated.status, 0, migrated.stderr)
    })
  })
})
