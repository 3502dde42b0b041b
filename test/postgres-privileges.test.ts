import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { generateApiKey } from '../src/auth/api-key.ts'
import { temporaryDirectory } from './helpers/cleanup.ts'
import { requesterFor, runCli, serveForTest, waitForLog } from './helpers/cli-process.ts'
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

  test('when a table the service uses is given to another role under a running instance (a restore run as another role, ALTER TABLE … OWNER TO), then its calls get 503 with Retry-After, never a 500, and the condition is logged once with what to do, as a command says it; given back, they are served', async (t) => {
    const admin = await (await sharedPostgres()).createDatabase()
    const database = new URL(admin).pathname.slice(1)
    const owner = `${ROLE}_owner`
    const superuser = new URL(admin).username
    await postgresSql(admin, `CREATE ROLE ${owner} LOGIN; ALTER DATABASE "${database}" OWNER TO ${owner}`)
    const key = generateApiKey()
    const env = {
      DATABASE_URL: Object.assign(new URL(admin), { username: owner }).href,
      API_KEYS: `ops:${key}`,
    }
    const server = await serveForTest(t, env, temporaryDirectory(t))
    t.after(async () => {
      await server.exited
      await postgresSql(
        admin,
        `ALTER DATABASE "${database}" OWNER TO ${superuser}; DROP OWNED BY ${owner}; DROP ROLE ${owner}`,
      )
    })
    const request = requesterFor(key)
    const pet = JSON.stringify({ name: 'Rex', categoryId: 1 })
    assert.equal((await request(server, '/v1/pets', { method: 'POST', body: pet })).status, 201)

    await postgresSql(admin, `ALTER TABLE pets OWNER TO ${superuser}`)
    for (const [method, path] of [
      ['GET', '/v1/pets'],
      ['GET', '/v1/pets/2'],
      ['POST', '/v1/pets'],
    ] as const) {
      const answer = await request(server, path, { method, ...(method === 'POST' ? { body: pet } : {}) })
      const text = await answer.text()
      assert.equal(answer.status, 503, `${method} ${path}: ${text}`)
      assert.equal(answer.headers.get('retry-after'), '1')
      assert.equal(JSON.parse(text).code, 'service_unavailable')
      assert.doesNotMatch(text, /permission|pets\b|owner/, 'no internals')
    }
    // Written in batches, a moment after the answers.
    const said = await waitForLog(server, (lines) => {
      const refusals = lines.flatMap(({ err }) => {
        const { message, remedy } = (err ?? {}) as { message?: string; remedy?: string }
        return message?.includes('insufficient privilege') ? [`${message}; ${remedy}`] : []
      })
      return refusals.length > 0 ? refusals : undefined
    })
    assert.equal(said.length, 1, `one line for the condition: ${JSON.stringify(said)}`)
    assert.match(said[0] as string, /permission denied for table pets; give the role its tables back \(ALTER/)

    const seeded = await runCli(
      ['seed', '--count', '1'],
      { DATABASE_URL: env.DATABASE_URL },
      temporaryDirectory(t),
    )
    assert.deepEqual(
      [seeded.status, seeded.stderr],
      [
        1,
        "petstore seed: the database refuses this service's role a table it uses (insufficient privilege): " +
          'permission denied for table pets; give the role its tables back (ALTER TABLE … OWNER TO it, or ' +
          'GRANT SELECT, INSERT, UPDATE, DELETE ON them TO it), then run it again\n',
      ],
      'a command meets it as the service does, and says what to do',
    )

    await postgresSql(admin, `ALTER TABLE pets OWNER TO ${owner}`)
    assert.equal((await request(server, '/v1/pets')).status, 200)
    assert.equal((await request(server, '/v1/pets', { method: 'POST', body: pet })).status, 201)
  })
})
