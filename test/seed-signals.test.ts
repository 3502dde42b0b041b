import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { readFileSync } from 'node:fs'
import { constants } from 'node:os'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { describe, test } from 'node:test'
import { MIGRATION_LOCK } from '../src/store/postgres/postgres-migrator.ts'
import { waitUntil, within } from './helpers/bounded-wait.ts'
import { CLI, cliEnvironment, runCli } from './helpers/cli-process.ts'
import { postgresLack, sharedPostgres } from './helpers/postgres-server.ts'
import { adminOn, untilRows } from './helpers/postgres-store-fixtures.ts'
import { postgresSql } from './helpers/store-engines.ts'
import { suiteNeeding } from './helpers/suite-requirements.ts'
import { temporaryDirectory } from './helpers/test-server.ts'

// Far more than a seed adds before the test stops it: the stop always lands part way.
const SEEDING = 2_000_000
const SHELL_CODES = { SIGINT: 130, SIGTERM: 143, SIGHUP: 129 } as const

/** `petstore seed --count SEEDING`, running: its process, and `ended()`, its exit and output. */
function startSeed(t: { after(fn: () => unknown): void }, cwd: string, env: Record<string, string>) {
  const child = spawn(process.execPath, [CLI, 'seed', '--count', String(SEEDING)], {
    cwd,
    env: cliEnvironment(env),
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  t.after(() => child.kill('SIGKILL'))
  let [stdout, stderr] = ['', '']
  child.stdout.setEncoding('utf8').on('data', (text: string) => {
    stdout += text
  })
  child.stderr.setEncoding('utf8').on('data', (text: string) => {
    stderr += text
  })
  const closed = once(child, 'close') as Promise<[number | null, NodeJS.Signals | null]>
  const ended = async () => {
    const [code, killedBy] = await within(closed, 60_000, () => `the seed did not end: ${stderr}`)
    return { code, killedBy, stdout, stderr }
  }
  return { child, ended }
}

/**
 * Seeds on a migrated database (so stderr holds the seed's lines alone), and sends `signal` once `stored`
 * finds some pets there; the seed's exit and output.
 */
async function seedStopped(
  t: { after(fn: () => unknown): void },
  {
    cwd,
    env,
    signal,
    stored,
  }: {
    cwd: string
    env: Record<string, string>
    signal: keyof typeof SHELL_CODES
    stored: () => Promise<number>
  },
) {
  assert.equal((await runCli(['migrate'], env, cwd)).status, 0)
  const seed = startSeed(t, cwd, env)
  await waitUntil(async () => (await stored().catch(() => 0)) > 0, 'the seed stored its first pets', {
    timeoutMs: 60_000,
    everyMs: 50,
  })
  seed.child.kill(signal)
  return seed.ended()
}

/** Process `pid`'s status (Linux's /proc), or undefined once it is gone. */
function statusOf(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/status`, 'utf8')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw error
  }
}

/** Whether process `pid` has a handler of its own for `signal` (its SigCgt mask). */
function catches(pid: number, signal: NodeJS.Signals): boolean {
  const mask = /^SigCgt:\s*([0-9a-f]+)$/m.exec(statusOf(pid) ?? '')?.[1] ?? '0'
  return ((BigInt(`0x${mask}`) >> BigInt((constants.signals[signal] ?? 1) - 1)) & 1n) === 1n
}

/** The stopped seed's one line names exactly the pets stored (whole batches), and the --count of the rest. */
function assertSaysStored(
  seed: Awaited<ReturnType<typeof seedStopped>>,
  signal: keyof typeof SHELL_CODES,
  pets: number,
) {
  assert.ok(pets > 0 && pets < SEEDING, `stopped part way (${pets} pets stored)`)
  assert.equal(pets % 1000, 0, `whole batches of 1000 pets (${pets} stored)`)
  assert.equal(
    seed.stderr,
    `petstore seed: added ${pets} of ${SEEDING} pets before: stopped by ${signal} ` +
      `(--count ${SEEDING - pets} adds the rest)\n`,
  )
  assert.deepEqual([seed.code, seed.killedBy], [SHELL_CODES[signal], null], "the signal's shell code")
  assert.equal(seed.stdout, '')
}

/** The pets in the SQLite database at `path`, read by a read-only connection of its own. */
async function sqlitePets(path: string): Promise<number> {
  const db = new DatabaseSync(path, { readOnly: true })
  try {
    return Number((db.prepare('SELECT count(*) AS n FROM pets').get() as { n: number }).n)
  } finally {
    db.close()
  }
}

describe('petstore CLI: a seed stopped by a signal', () => {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    test(`when a seed is stopped by ${signal} part way, then it ends after the batch under way, saying in one line how many pets it added and the --count that adds the rest, exit ${SHELL_CODES[signal]}`, async (t) => {
      const cwd = temporaryDirectory(t)
      const stored = () => sqlitePets(join(cwd, 'data', 'petstore.db'))
      const seed = await seedStopped(t, { cwd, env: {}, signal, stored })
      assertSaysStored(seed, signal, await stored())
    })
  }
})

describe(
  'petstore CLI: a seed on PostgreSQL stopped by a signal',
  suiteNeeding('the PostgreSQL seed suite', postgresLack()),
  () => {
    test('when a seed on PostgreSQL is stopped by SIGHUP part way, then the line counts every batch committed, none in flight missed, exit 129', async (t) => {
      const url = await (await sharedPostgres()).createDatabase()
      const stored = async () => Number((await postgresSql(url, 'SELECT count(*) AS n FROM pets'))[0]?.n)
      const env = { DATABASE_URL: url }
      const seed = await seedStopped(t, { cwd: temporaryDirectory(t), env, signal: 'SIGHUP', stored })
      assertSaysStored(seed, 'SIGHUP', await stored())
    })

    test("when a seed on PostgreSQL is stopped while it waits for another process's migrations, then it ends at once, saying it added no pet, exit 130", async (t) => {
      const url = await (await sharedPostgres()).createDatabase()
      const admin = await adminOn(t, url)
      await admin.query('BEGIN')
      await admin.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK])
      const seed = startSeed(t, temporaryDirectory(t), { DATABASE_URL: url })
      await untilRows(
        admin,
        "SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
        'the seed never waited for the migration lock',
        { timeoutMs: 15_000, everyMs: 50 },
      )
      seed.child.kill('SIGINT')
      const { code, killedBy, stdout, stderr } = await seed.ended()
      await admin.query('COMMIT')
      assert.deepEqual([code, killedBy], [130, null])
      // After the log's line saying it waits for the lock.
      assert.ok(stderr.endsWith('}\npetstore seed: stopped by SIGINT before adding any pet\n'), stderr)
      assert.equal(stdout, '')
    })

    test('when a second signal comes while a seed waits for its batch, then it ends at once, by that signal', async (t) => {
      const cwd = temporaryDirectory(t)
      // The batch waits as long as the test needs: the default 5 s could end it first on a busy machine.
      const env = {
        DATABASE_URL: await (await sharedPostgres()).createDatabase(),
        PG_STATEMENT_TIMEOUT_MS: '60000',
      }
      assert.equal((await runCli(['migrate'], env, cwd)).status, 0)
      const admin = await adminOn(t, env.DATABASE_URL)
      await admin.query('BEGIN')
      await admin.query('LOCK TABLE pets IN SHARE MODE')
      const seed = startSeed(t, cwd, env)
      await untilRows(
        admin,
        "SELECT 1 FROM pg_locks WHERE relation = 'pets'::regclass AND NOT granted",
        'the seed never waited for its batch',
        { timeoutMs: 15_000, everyMs: 50 },
      )
      const pid = seed.child.pid ?? 0
      assert.ok(catches(pid, 'SIGHUP'), 'waiting for its batch, the seed handles the stop signals')
      seed.child.kill('SIGINT')
      await waitUntil(() => !catches(pid, 'SIGHUP'), 'the seed never took the first signal')
      assert.match(statusOf(pid) ?? '', /^State:\s*[RSD]/m, 'the first signal waits for the batch')
      seed.child.kill('SIGINT')
      const { code, killedBy, stderr } = await seed.ended()
      await admin.query('ROLLBACK')
      assert.deepEqual([code, killedBy, stderr], [null, 'SIGINT', ''])
    })
  },
)
