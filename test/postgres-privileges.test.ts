import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { temporaryDirectory } from './helpers/cleanup.ts'
import { runCli } from './helpers/cli-process.ts'
import { sharedPostgres } from './helpers/postgres-server.ts'
import { engineSuiteOptions, postgresEngine, postgresSql } from './helpers/store-engines.ts'

// A role of this run's own: roles are the server's, not a database's.
const ROLE = `not_owner_${process.pid}`

describe('PostgreSQL privileges', engineSuiteOptions(postgresEngine), () => {
  test("when the role may not create in the database's schema (PostgreSQL 15: only the owner may), then migrate, serve and copy say so in one line, with the two ways to mend it", async (t) => {
    const admin = await (await sharedPostgres()).createDatabase()
    await postgresSql(admin, `CREATE ROLE ${ROLE} LOGIN`)
    // PostgreSQL 15's default, made so on an older server (PETSTORE_TEST_POSTGRES_URL) too.
    await postgresSql(admin, 'REVOKE CREATE ON SCHEMA public FROM PUBLIC')
    t.after(async () => {
      await postgresSql(admin, `DROP OWNED BY ${ROLE}; DROP ROLE ${ROLE}`)
    })
    const url = new URL(admin)
    url.username = ROLE
    const database = url.pathname.slice(1)
    const said = new RegExp(
      `^petstore (migrate|serve|copy): the database role ${ROLE} may not create tables in schema public ` +
        `\\(permission denied for schema public\\): make it the database's owner \\(ALTER DATABASE ${database} ` +
        `OWNER TO ${ROLE}\\), or GRANT CREATE ON SCHEMA public TO ${ROLE}\\n$`,
    )
    const cwd = temporaryDirectory(t)
    for (const args of [['migrate'], ['serve'], ['copy', '--from', 'sqlite:s.db', '--to', url.href]]) {
      if (args[0] === 'copy') {
        const seeded = await runCli(['seed', '--count', '1'], { DATABASE_URL: 'sqlite:s.db' }, cwd, {
          timeoutMs: 120_000,
        })
        assert.equal(seeded.status, 0, seeded.stderr)
      }
      const result = await runCli(args, { DATABASE_URL: url.href, PORT: '0' }, cwd, {
        timeoutMs: 20_000,
      })
      assert.equal(result.status, 1, result.stderr)
      assert.match(result.stderr, said)
    }
  })

  // Eleven commands started one after another: about 12 s on a quiet host, over 30 s on a busy one.
  test('when the search_path names no schema the role may use (a typo in the URL, or USAGE revoked), then migrate, serve, keys and copy, either way, say so in one line with what to do', {
    timeout: 120_000,
  }, async (t) => {
    const admin = await (await sharedPostgres()).createDatabase()
    const database = new URL(admin).pathname.slice(1)
    const user = `${ROLE}_usage`
    await postgresSql(admin, `CREATE ROLE ${user} LOGIN; REVOKE ALL ON SCHEMA public FROM PUBLIC`)
    t.after(async () => {
      await postgresSql(admin, `DROP OWNED BY ${user}; DROP ROLE ${user}`)
    })
    const typo = Object.assign(new URL(admin), { search: '?options=-c%20search_path%3Dmissing' })
    const revoked = Object.assign(new URL(admin), { username: user })
    const cwd = temporaryDirectory(t)
    const seeded = await runCli(['seed', '--count', '1'], { DATABASE_URL: 'sqlite:s.db' }, cwd, {
      timeoutMs: 120_000,
    })
    assert.equal(seeded.status, 0, seeded.stderr)
    for (const [url, role, path] of [
      [typo, new URL(admin).username, 'missing'],
      [revoked, user, '"$user", public'],
    ] as const) {
      const said =
        `the search_path (${path}) names no schema in database ${database} that the role ${role} may use: ` +
        `create one (CREATE SCHEMA …), GRANT USAGE, CREATE ON SCHEMA … TO ${role}, or name another ` +
        '(options=-c search_path=… in the URL)\n'
      for (const args of [
        ['migrate'],
        ['serve'],
        ['keys', 'list'],
        ['copy', '--from', 'sqlite:s.db', '--to', url.href],
        ['copy', '--from', url.href, '--to', 'sqlite:x.db'],
      ]) {
        const result = await runCli(args, { DATABASE_URL: url.href, PORT: '0' }, cwd, {
          timeoutMs: 20_000,
        })
        assert.deepEqual([result.status, result.stderr], [1, `petstore ${args[0]}: ${said}`], args.join(' '))
      }
    }
  })
})
