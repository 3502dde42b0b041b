import assert from 'node:assert/strict'
import { readFileSync, writeFileSync } from 'node:fs'
import { describe, type TestContext, test } from 'node:test'
import { generateApiKey } from '../src/auth/api-key.ts'
import { waitUntil } from './helpers/bounded-wait.ts'
import { temporaryDirectory } from './helpers/cleanup.ts'
import {
  type LogLine,
  logLines,
  requesterFor,
  runCli,
  startServeProcess,
  waitForLog,
} from './helpers/cli-process.ts'
import { startThrowawayPostgres, throwawayPostgresSuiteOptions } from './helpers/postgres-server.ts'
import { postgresSql } from './helpers/store-engines.ts'

const ROLE = 'needs_password'

/**
 * A database owned by a role that must give its password over TCP (SCRAM), as on most real servers; on
 * a server of this test's own, whose other roles keep trusting local connections.
 */
async function passwordProtectedDatabase(t: TestContext): Promise<{
  admin: string
  withoutPassword: string
  withPassword: string
}> {
  const server = await startThrowawayPostgres()
  t.after(() => server.stop('immediate'))
  const admin = await server.createDatabase()
  const [hba] = await postgresSql(admin, 'SHOW hba_file')
  const file = String(hba?.hba_file)
  writeFileSync(file, `host all ${ROLE} 127.0.0.1/32 scram-sha-256\n${readFileSync(file, 'utf8')}`)
  await postgresSql(admin, `CREATE ROLE ${ROLE} LOGIN PASSWORD 'secret'`)
  const database = new URL(admin).pathname.slice(1)
  await postgresSql(admin, `ALTER DATABASE ${database} OWNER TO ${ROLE}`)
  await postgresSql(admin, 'SELECT pg_reload_conf()')
  const url = new URL(admin)
  url.username = ROLE
  const withoutPassword = url.href
  url.password = 'secret'
  return { admin, withoutPassword, withPassword: url.href }
}

const NO_PASSWORD =
  /the PostgreSQL server asks for a password, and none was given \(DATABASE_URL, or copy's --from or --to\): set PGPASSWORD, or put it in DATABASE_URL \(not in copy's arguments: ps shows them\)/

// Its servers are its own (a role's password in pg_hba.conf): never one named by URL.
describe('PostgreSQL credentials', throwawayPostgresSuiteOptions(), () => {
  test('when the server asks for a password and the URL gives none, then migrate, serve and copy exit 1 at once, with one line saying so', async (t) => {
    const { withoutPassword, withPassword } = await passwordProtectedDatabase(t)
    const cwd = temporaryDirectory(t)
    const env = { DATABASE_URL: withoutPassword, PG_CONNECT_TIMEOUT_MS: '2000', PORT: '0' }
    for (const command of ['migrate', 'serve']) {
      const started = performance.now()
      // The server would keep the half-done login open for its authentication_timeout (60 s).
      const result = await runCli([command], env, cwd, { timeoutMs: 20_000 })
      const seconds = (performance.now() - started) / 1000
      assert.equal(result.status, 1, result.stderr)
      assert.equal(result.stderr.trim().split('\n').length, 1, result.stderr)
      assert.match(result.stderr, NO_PASSWORD)
      assert.ok(seconds < 10, `${command} ended after ${seconds.toFixed(1)} s`)
    }
    // copy names its target with --to, not DATABASE_URL: the line says which URLs it means.
    const source = await runCli(['seed', '--count', '1'], { DATABASE_URL: 'sqlite:s.db' }, cwd, {
      timeoutMs: 120_000,
    })
    assert.equal(source.status, 0, source.stderr)
    const copy = await runCli(['copy', '--from', 'sqlite:s.db', '--to', withoutPassword], {}, cwd, {
      timeoutMs: 20_000,
    })
    assert.equal(copy.status, 1, copy.stderr)
    assert.match(copy.stderr, NO_PASSWORD)
    const withIt = await runCli(['migrate'], { ...env, DATABASE_URL: withPassword }, cwd, {
      timeoutMs: 120_000,
    })
    assert.equal(withIt.status, 0, `the role logs in with its password: ${withIt.stderr}`)
  })

  test('when DATABASE_URL reaches PostgreSQL by its Unix socket (no host before the path), then the service starts, serves, and its start line names the socket', async (t) => {
    const server = await startThrowawayPostgres()
    t.after(() => server.stop('immediate'))
    const tcp = new URL(await server.createDatabase())
    const url = `postgres://postgres@${tcp.pathname}?host=${server.socketDirectory}&port=${tcp.port}`
    const key = generateApiKey()
    const serving = await startServeProcess(
      { DATABASE_URL: url, API_KEYS: `ops:${key}` },
      temporaryDirectory(t),
    )
    t.after(() => serving.child.kill('SIGKILL'))
    const created = await requesterFor(key)(serving, '/v1/pets', {
      method: 'POST',
      body: '{"name":"Rex","categoryId":1}',
    })
    assert.equal(created.status, 201, serving.output())
    const line = logLines(serving).find((entry) => String(entry.msg).startsWith('serving '))
    assert.ok(
      String(line?.msg).endsWith(
        `; store: postgres://postgres@${tcp.pathname} (socket ${server.socketDirectory}))`,
      ),
      String(line?.msg),
    )
  })

  test("when the role's password changes under a running service, then its requests are 503 with Retry-After (not 500), the log says so once, and it serves again once the password is back", async (t) => {
    const { admin, withPassword } = await passwordProtectedDatabase(t)
    const key = generateApiKey()
    const server = await startServeProcess(
      { DATABASE_URL: withPassword, API_KEYS: `ops:${key}` },
      temporaryDirectory(t),
    )
    t.after(() => server.child.kill('SIGKILL'))
    // The start line names the store an operator reaches, without its password.
    const serving = logLines(server).find((line) => String(line.msg).startsWith('serving '))
    const { host, pathname } = new URL(withPassword)
    const store = `; store: postgres://${ROLE}@${host}${pathname})`
    assert.ok(String(serving?.msg).endsWith(store), String(serving?.msg))
    assert.doesNotMatch(server.output(), /secret/)
    const request = requesterFor(key)
    const create = () =>
      request(server, '/v1/pets', { method: 'POST', body: '{"name":"Rex","categoryId":1}' })
    assert.equal((await create()).status, 201)

    // A rotation done on the server first: the connections open keep working until they are replaced.
    await postgresSql(admin, `ALTER ROLE ${ROLE} PASSWORD 'rotated'`)
    await postgresSql(
      admin,
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '${ROLE}'`,
    )
    for (let i = 0; i < 5; i++) {
      const created = await create()
      assert.equal(created.status, 503, await created.text())
      assert.equal(created.headers.get('retry-after'), '1')
      const listed = await request(server, '/v1/pets')
      assert.ok([200, 503].includes(listed.status), `list: ${listed.status}`)
    }
    // The log is written in batches: waited for, then read whole (what came before it is out too).
    const saying = (lines: LogLine[]) =>
      lines.filter((line) => /refuses this service's connections/.test(JSON.stringify(line.err)))
    await waitForLog(server, (lines) => (saying(lines).length > 0 ? true : undefined))
    const lines = logLines(server)
    assert.deepEqual(
      lines.filter((line) => Number(line.level) >= 50 && line.msg === 'request failed'),
      [],
    )
    assert.equal(saying(lines).length, 1, server.output())
    assert.match(JSON.stringify(saying(lines)[0]?.err), /password authentication failed/)
    assert.doesNotMatch(server.output(), /rotated|secret/, 'no password in the log')

    // A command started meanwhile says the same in its one line, the server's reason with it.
    const migrate = await runCli(['migrate'], { DATABASE_URL: withPassword }, temporaryDirectory(t), {
      timeoutMs: 120_000,
    })
    assert.equal(migrate.status, 1)
    assert.match(
      migrate.stderr,
      /^petstore migrate: the database refuses this service's connections: password authentication failed for user "needs_password"\n$/,
    )

    await postgresSql(admin, `ALTER ROLE ${ROLE} PASSWORD 'secret'`)
    await waitUntil(
      async () => (await create()).status === 201,
      () => `no 201 again:\n${server.output()}`,
    )
  })
})
