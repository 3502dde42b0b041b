import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { temporaryDirectory } from './helpers/cleanup.ts'
import { runCliAsync } from './helpers/cli-async.ts'
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
        const seeded = await runCliAsync(['seed', '--count', '1'], { DATABASE_URL: 'sqlite:s.db' }, cwd)
        assert.equal(seeded.status, 0, seeded.stderr)
      }
      const result = await runCliAsync(args, { DATABASE_URL: url.href, PORT: '0' }, cwd, {
        timeoutMs: 20_000,
      })
      assert.equal(result.status, 1, result.stderr)
      assert.match(result.stderr, said)
    }
  })
})
