import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import { MIGRATION_LOCK } from '../src/store/postgres/postgres-migrator.ts'
import { waitUntil, within } from './helpers/bounded-wait.ts'
import { temporaryDirectory } from './helpers/cleanup.ts'
import { logLines, startServeProcess } from './helpers/cli-process.ts'
import { adminOn, emptyDatabase, storeOn, untilRows } from './helpers/postgres-store-fixtures.ts'
import { engineSuiteOptions, postgresEngine } from './helpers/store-engines.ts'

describe('many instances on one PostgreSQL database', engineSuiteOptions(postgresEngine), () => {
  test('when an instance starts while another holds the migrations for longer than a statement may run, then it waits for it and starts, rather than fail at the statement timeout', async (t) => {
    const url = await emptyDatabase()
    const admin = await adminOn(t, url)
    // Another instance migrating: it holds the lock for three times the waiting store's statement timeout.
    await admin.query('BEGIN')
    await admin.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK])
    const store = storeOn(t, url, { statementTimeoutMs: 1000 })
    let settled = false
    const migrating = store.migrate().finally(() => {
      settled = true
    })
    await sleep(3000)
    assert.equal(settled, false, 'the migration ended while another held the lock')
    await admin.query('COMMIT')
    const { current, latest } = await within(migrating, 10_000, 'the migration never ended')
    assert.equal(current, latest)
  })

  test('when an instance starts while another process holds the migrations, then one line says it waits for them, and it serves once they end', async (t) => {
    const url = await emptyDatabase()
    const admin = await adminOn(t, url)
    await admin.query('BEGIN')
    await admin.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK])
    const starting = startServeProcess({ DATABASE_URL: url }, temporaryDirectory(t))
    // Killed however the test ends: a start still waiting serves once the lock is let go with the admin.
    t.after(async () => (await starting.catch(() => undefined))?.child.kill('SIGKILL'))
    // Released once the start waits for it, however long a busy machine takes to get there.
    await untilRows(
      admin,
      "SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
      'the start never waited for the migration lock',
      { timeoutMs: 15_000, everyMs: 50 },
    )
    await admin.query('COMMIT')
    const server = await starting
    const waits = logLines(server).filter((line) => /migrat/.test(String(line.msg)))
    assert.deepEqual(
      waits.map(({ level, msg }) => [level, msg]),
      [
        [
          40,
          'another process holds the migration lock (migrating the database): waiting for it, up to 10 min',
        ],
      ],
    )
  })

  test("when a 1.0.0 instance serves while this release's first start adds the compatibility floors, then its readiness query keeps answering, before, during and after, and its own start still works", async (t) => {
    const { reopen, sql, databaseUrl } = await postgresEngine.open(t)
    // The bookkeeping as 1.0.0 left it: no floor column.
    await sql('ALTER TABLE schema_migrations DROP COLUMN compatible_from')
    const old = new pg.Client({ connectionString: databaseUrl })
    await old.connect()
    t.after(() => old.end())
    // 1.0.0's statements, as it sent them: its readiness probe is a named, prepared statement.
    const probe = { name: 'schema.status', text: 'SELECT max(version) AS current FROM schema_migrations' }
    assert.deepEqual((await old.query(probe)).rows, [{ current: 2 }])

    const answers: unknown[] = []
    let probing = true
    const probes = (async () => {
      while (probing) {
        try {
          answers.push((await old.query(probe)).rows[0]?.current)
        } catch (error) {
          answers.push(String(error))
        }
        await sleep(2)
      }
    })()
    // Counted, not timed: a loaded host fits fewer probes in a given time.
    const answered = (count: number) =>
      waitUntil(
        () => answers.length >= count,
        () => `only ${answers.length} probes`,
      )
    await answered(5)
    await reopen()
    const during = answers.length
    await answered(during + 5)
    probing = false
    await probes

    const floors = await sql('SELECT version, compatible_from FROM schema_migrations ORDER BY version')
    assert.deepEqual(
      floors.map((row) => [row.version, row.compatible_from]),
      [
        [1, null],
        [2, null],
      ],
      'the column added, the rows of 1.0.0 left without a floor',
    )
    assert.deepEqual(
      answers.filter((answer) => answer !== 2),
      [],
      'every probe answered schema 2',
    )
    // 1.0.0's own start reads and records versions by name, which the added column leaves as they were.
    await old.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`)
    assert.deepEqual((await old.query('SELECT version FROM schema_migrations')).rows, [
      { version: 1 },
      { version: 2 },
    ])
  })
})
