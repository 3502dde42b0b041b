import assert from 'node:assert/strict'
import { readFileSync, writeFileSync } from 'node:fs'
import { describe, test } from 'node:test'
import { temporaryDirectory } from './helpers/cleanup.ts'
import { runCliAsync } from './helpers/cli-async.ts'
import { startThrowawayPostgres } from './helpers/postgres-server.ts'
import { engineSuiteOptions, postgresEngine, postgresSql } from './helpers/store-engines.ts'

const ROLE = 'needs_password'

/**
 * A database owned by a role that must give its password over TCP (SCRAM), as on most real servers; on
 * a server of this test's own, whose other roles keep trusting local connections.
 */
async function passwordProtectedDatabase(): Promise<{ withoutPassword: string; withPassword: string }> {
  const server = await startThrowawayPostgres()
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
  return { withoutPassword, withPassword: url.href }
}

describe('PostgreSQL credentials', engineSuiteOptions(postgresEngine), () => {
  test('when the server asks for a password and DATABASE_URL gives none, then migrate and serve exit 1 at once, with one line saying so', async (t) => {
    const { withoutPassword, withPassword } = await passwordProtectedDatabase()
    const cwd = temporaryDirectory(t)
    const env = { DATABASE_URL: withoutPassword, PG_CONNECT_TIMEOUT_MS: '2000', PORT: '0' }
    for (const command of ['migrate', 'serve']) {
      const started = performance.now()
      // The server would keep the half-done login open for its authentication_timeout (60 s).
      const result = await runCliAsync([command], env, cwd, { timeoutMs: 20_000 })
      const seconds = (performance.now() - started) / 1000
      assert.equal(result.status, 1, result.stderr)
      assert.equal(result.stderr.trim().split('\n').length, 1, result.stderr)
      assert.match(result.stderr, /the PostgreSQL server asks for a password, and DATABASE_URL has none/)
      assert.ok(seconds < 10, `${command} ended after ${seconds.toFixed(1)} s`)
    }
    const withIt = await runCliAsync(['migrate'], { ...env, DATABASE_URL: withPassword }, cwd)
    assert.equal(withIt.status, 0, `the role logs in with its password: ${withIt.stderr}`)
  })
})
