import assert from 'node:assert/strict'
import { execFile, spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { statSync } from 'node:fs'
import { join } from 'node:path'
import { describe, type TestContext, test } from 'node:test'
import { promisify } from 'node:util'
import pg from 'pg'
import { generateApiKey } from '../src/auth/api-key.ts'
import { waitUntil } from './helpers/bounded-wait.ts'
import { requesterFor, runCli, type ServeProcess, startServeProcess, stop } from './helpers/cli-process.ts'
import { postgresLack, postgresProgram, sharedPostgres } from './helpers/postgres-server.ts'
import { walkCatalogue } from './helpers/set-test.ts'
import { suiteNeeding } from './helpers/suite-requirements.ts'
import { temporaryDirectory } from './helpers/test-server.ts'

/** Runs a PostgreSQL client program as the README's runbook does; it must succeed. */
function runbook(program: string, args: string[], env: Record<string, string> = {}): void {
  const result = spawnSync(postgresProgram(program), args, {
    encoding: 'utf8',
    timeout: 120_000,
    env: { ...process.env, ...env },
  })
  assert.equal(result.status, 0, `${program} ${args.join(' ')}: ${result.error?.message ?? result.stderr}`)
}

/** A database an instance serves (`old`), and a migrated one (`restored`, as pg_restore makes it). */
async function servedAndMigrated(t: TestContext) {
  const cwd = temporaryDirectory(t)
  const postgres = await sharedPostgres()
  const [old, restored] = [await postgres.createDatabase(), await postgres.createDatabase()]
  assert.equal((await runCli(['migrate'], { DATABASE_URL: restored }, cwd)).status, 0)
  const key = generateApiKey()
  const server = await startServeProcess({ API_KEYS: `ops:${key}`, DATABASE_URL: old }, cwd)
  t.after(() => server.child.kill('SIGKILL'))
  return { cwd, old, restored, server, request: requesterFor(key) }
}

/** Makes a database read-only for the sessions opened from now on, and ends the service's if asked. */
async function makeReadOnly(url: string, { endSessions }: { endSessions: boolean }): Promise<void> {
  const name = new URL(url).pathname.slice(1)
  const admin = new pg.Client({ connectionString: url })
  await admin.connect()
  try {
    await admin.query(`ALTER DATABASE "${name}" SET default_transaction_read_only = on`)
    if (endSessions) {
      await admin.query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
          WHERE datname = $1 AND application_name = 'petstore'`,
        [name],
      )
    }
  } finally {
    await admin.end()
  }
}

describe(
  'backup and restore (PostgreSQL runbook)',
  suiteNeeding('the PostgreSQL runbook suite', postgresLack()),
  () => {
    test('when a database is dumped with pg_dump -Fc, restored with pg_restore into a fresh one and finished with restore --replacing, then the service serves every pet byte for byte, a key revoked since stays revoked, and no id given out since is given again', {
      timeout: 120_000,
    }, async (t) => {
      const cwd = temporaryDirectory(t)
      const key = generateApiKey()
      // As in production: the service's own role, not a superuser, owns its database.
      const superuser = new URL(await (await sharedPostgres()).createDatabase())
      const role = `petstore_${randomBytes(4).toString('hex')}`
      const admin = new pg.Client({ connectionString: superuser.href })
      await admin.connect()
      try {
        await admin.query(`CREATE ROLE ${role} LOGIN PASSWORD 'runbook'`)
        await admin.query(`CREATE DATABASE ${role} OWNER ${role}`)
      } finally {
        await admin.end()
      }
      const original = Object.assign(new URL(superuser), {
        username: role,
        password: 'runbook',
        pathname: `/${role}`,
      }).href
      const env = { API_KEYS: `ops:${key}`, RATE_LIMIT_PER_MINUTE: '0' }
      const request = requesterFor(key)
      const servers: ServeProcess[] = []
      t.after(() => {
        for (const server of servers) server.child.kill('SIGKILL')
      })
      const serve = async (url: string) => {
        const server = await startServeProcess({ ...env, DATABASE_URL: url }, cwd)
        servers.push(server)
        return server
      }

      const before = await serve(original)
      let highest = 0n
      for (let i = 0; i < 250; i++) {
        const body = `{"name":"pet ${i}","categoryId":${9007199254740993n + BigInt(i)}${i % 3 ? ',"status":"sold"' : ''}}`
        const response = await request(before, '/v1/pets', { method: 'POST', body })
        assert.equal(response.status, 201)
        highest = BigInt(/"id":(\d+)/.exec(await response.text())?.[1] ?? 0)
      }
      const served = await walkCatalogue(before.origin, key)
      // Run without blocking this process while `before` serves: a client blocked longer than the keep-alive
      // timeout (a busy host) sends its next request on the connection the server has just closed.
      const leaked = await runCli(['keys', 'create', '--name', 'leaked'], { DATABASE_URL: original }, cwd, {
        timeoutMs: 120_000,
      })
      assert.equal(leaked.status, 0, leaked.stderr)
      const leakedKey = leaked.stdout.trim()

      const dump = join(cwd, 'petstore.dump')
      // As the README runs them: the password in PGPASSWORD, never in an argument (`ps` shows those).
      const unsaid = (url: string) => Object.assign(new URL(url), { password: '' }).href
      const password = { PGPASSWORD: 'runbook' }
      // In a shell with umask 077: the dump holds key hashes and the cursor secret.
      const pgDump = ['-c', 'umask 077 && "$0" -Fc -f "$1" "$2"', postgresProgram('pg_dump'), dump]
      await promisify(execFile)('sh', [...pgDump, unsaid(original)], {
        timeout: 120_000,
        env: { ...process.env, ...password },
      })
      assert.equal(statSync(dump).mode & 0o777, 0o600, "the dump is its owner's alone")
      // Since the dump: the leaked key revoked, and pets given ids a client now holds.
      const revoked = await runCli(['keys', 'revoke', '--name', 'leaked'], { DATABASE_URL: original }, cwd, {
        timeoutMs: 120_000,
      })
      assert.equal(revoked.status, 0, revoked.stderr)
      for (let i = 0; i < 3; i++) {
        const response = await request(before, '/v1/pets', {
          method: 'POST',
          body: '{"name":"since","categoryId":1}',
        })
        assert.equal(response.status, 201)
        highest = BigInt(/"id":(\d+)/.exec(await response.text())?.[1] ?? 0)
      }
      await stop(before)
      // createdb as the README has it, as the throwaway server's superuser, the service's role its owner.
      const restored = `petstore_restored_${randomBytes(4).toString('hex')}`
      runbook(
        'createdb',
        [
          '-h',
          superuser.hostname,
          '-p',
          superuser.port || '5432',
          '-U',
          superuser.username,
          '-O',
          role,
          restored,
        ],
        { PGPASSWORD: decodeURIComponent(superuser.password) },
      )
      const fresh = Object.assign(new URL(original), { pathname: `/${restored}` }).href
      runbook('pg_restore', ['--no-owner', '--exit-on-error', '-d', unsaid(fresh), dump], password)
      const carried = await runCli(
        ['restore', '--replacing', unsaid(original)],
        { DATABASE_URL: unsaid(fresh), ...password },
        cwd,
      )
      assert.deepEqual(
        [carried.status, carried.stdout, carried.stderr],
        [
          0,
          'kept what the database it replaces (253 pets) passes on; 1 revocation made since the backup kept; ' +
            `pet ids it gave out (up to ${highest}) not given again\n`,
          '',
        ],
      )

      // Kept as it was, to the microsecond PostgreSQL's clock gave it, not cut to the millisecond.
      const revokedAt = async (url: string) => {
        const client = new pg.Client({
          connectionString: Object.assign(new URL(superuser), { pathname: new URL(url).pathname }).href,
        })
        await client.connect()
        try {
          return (await client.query("SELECT revoked_at::text AS at FROM api_keys WHERE name = 'leaked'"))
            .rows[0]?.at
        } finally {
          await client.end()
        }
      }
      assert.equal(await revokedAt(fresh), await revokedAt(original))

      const after = await serve(fresh)
      assert.deepEqual(await walkCatalogue(after.origin, key), served)
      const withLeaked = await fetch(new URL('/v1/pets', after.origin), {
        headers: { authorization: `Bearer ${leakedKey}` },
      })
      assert.equal(withLeaked.status, 401, 'the key revoked since the dump stays revoked')
      const created = await request(after, '/v1/pets', {
        method: 'POST',
        body: '{"name":"after","categoryId":1}',
      })
      assert.equal(created.status, 201)
      assert.ok(
        BigInt(/"id":(\d+)/.exec(await created.text())?.[1] ?? 0) > highest,
        'no id given out since the dump is given again',
      )
      await stop(after)
    })

    test('when restore --replacing names a database that is not a Pet Store database, or none, then it says what it could not read, why and what to do, and exits 1, for the script that ran it to see', async (t) => {
      const cwd = temporaryDirectory(t)
      const postgres = await sharedPostgres()
      const [restored, other] = [await postgres.createDatabase(), await postgres.createDatabase()]
      assert.equal((await runCli(['migrate'], { DATABASE_URL: restored }, cwd)).status, 0)
      const admin = new pg.Client({ connectionString: other })
      await admin.connect()
      try {
        await admin.query('CREATE TABLE invoices (id int)')
      } finally {
        await admin.end()
      }
      const none = Object.assign(new URL(other), { pathname: '/no_such_database' }).href
      for (const [replacing, why] of [
        [other, 'the database lacks the Pet Store schema, or part of it .*'],
        [none, `the database refuses this service's connections: database "no_such_database" does not exist`],
      ] as const) {
        const carried = await runCli(['restore', '--replacing', replacing], { DATABASE_URL: restored }, cwd)
        assert.equal(carried.status, 1, carried.stdout + carried.stderr)
        assert.match(
          carried.stderr,
          new RegExp(
            `^could not keep all that the database it replaces passes on; it could not all be read \\(${why}\\): ` +
              ".*; mend --replacing's URL, or bring that database up, then run it again\n$",
          ),
        )
      }
    })

    test('when restore --replacing names a database an instance still serves, then it refuses in one line saying how many sessions and what to do, and changes nothing; once that database is read-only for the service, it goes ahead', async (t) => {
      const { cwd, old, restored, server, request } = await servedAndMigrated(t)
      for (let i = 0; i < 3; i++) {
        const body = '{"name":"Rex","categoryId":1}'
        assert.equal((await request(server, '/v1/pets', { method: 'POST', body })).status, 201)
      }
      const drawn = async () => {
        const client = new pg.Client({ connectionString: restored })
        await client.connect()
        try {
          return (await client.query('SELECT is_called FROM pets_id_seq')).rows[0]?.is_called
        } finally {
          await client.end()
        }
      }

      const refused = await runCli(['restore', '--replacing', old], { DATABASE_URL: restored }, cwd)
      assert.equal(refused.status, 1, refused.stdout + refused.stderr)
      assert.match(
        refused.stderr,
        /^petstore restore: the database it replaces is in use by \d+ sessions? of the service: stop the instances on it, or make it read-only .+: nothing was changed\n$/,
      )
      assert.equal(refused.stdout, '')
      assert.equal(await drawn(), false, 'the restored database is unchanged')

      // The README's other way: the database read-only for the service, its sessions ended; the instance
      // connects again, read-only, and still serves reads.
      await makeReadOnly(old, { endSessions: true })
      await waitUntil(
        async () => (await request(server, '/v1/pets')).status === 200,
        'the instance did not serve reads again',
      )
      const carried = await runCli(['restore', '--replacing', old], { DATABASE_URL: restored }, cwd)
      assert.deepEqual([carried.status, carried.stderr], [0, ''])
      // The instance's new sessions are ended too: from here the command cannot tell them from older ones.
      assert.match(
        carried.stdout,
        /^kept what the database it replaces \(3 pets\) passes on; ended \d+ sessions? of the service on it, which may have begun before it was read-only; pet ids it gave out \(up to \d+\) not given again; 1 key made since the backup is not in it: ops\n$/,
      )
      assert.equal(await drawn(), true, 'its id sequence raised past the pets given out')
      await waitUntil(
        async () => (await request(server, '/v1/pets')).status === 200,
        'the instance did not serve reads again after the restore',
      )
    })

    test('when the database it replaces is made read-only but the sessions an instance opened before are not ended, then restore --replacing ends them before it reads what to carry, so the instance can no longer create a pet whose id the restored database gives again', async (t) => {
      const { cwd, old, restored, server, request } = await servedAndMigrated(t)
      const create = () =>
        request(server, '/v1/pets', { method: 'POST', body: '{"name":"Rex","categoryId":1}' })
      assert.equal((await create()).status, 201)
      // Read-only for new sessions only: the instance's open ones could still write.
      await makeReadOnly(old, { endSessions: false })

      const carried = await runCli(['restore', '--replacing', old], { DATABASE_URL: restored }, cwd)
      assert.equal(carried.status, 0, carried.stdout + carried.stderr)
      assert.match(
        carried.stdout,
        /^kept what the database it replaces \(1 pet\) passes on; ended \d+ sessions? of the service on it, which may have begun before it was read-only;/,
      )
      const after = await create()
      assert.notEqual(after.status, 201, `a create on the replaced database was acknowledged: ${after.text}`)
    })
  },
)
