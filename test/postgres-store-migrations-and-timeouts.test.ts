import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { StoreUnavailableError } from '../src/errors.ts'
import { postgresMigrations } from '../src/store/postgres/postgres-migrations.ts'
import { temporaryDirectory } from './helpers/cleanup.ts'
import { runCli } from './helpers/cli-process.ts'
import { create } from './helpers/postgres-held-inserts.ts'
import { adminOn, emptyDatabase, migratedStore, storeOn } from './helpers/postgres-store-fixtures.ts'
import { engineSuiteOptions, postgresEngine } from './helpers/store-engines.ts'

const LATEST = postgresMigrations.at(-1)?.version ?? 0

describe('PostgreSQL store', engineSuiteOptions(postgresEngine), () => {
  test('when four fresh stores migrate an empty database at once, then all succeed and the schema is applied once', async (t) => {
    const url = await emptyDatabase()
    const stores = Array.from({ length: 4 }, () => storeOn(t, url))
    const reports = await Promise.all(stores.map((store) => store.migrate()))
    const everything = postgresMigrations.map((migration) => migration.version)
    assert.deepEqual(
      reports.map((report) => report.applied).filter((applied) => applied.length > 0),
      [everything],
      'exactly one store applied the migrations, all of them; the others found them done',
    )
    for (const report of reports) assert.equal(report.current, LATEST)
    const { rows } = await (await adminOn(t, url)).query<{ version: number; times: string }>(
      'SELECT version, count(*) AS times FROM schema_migrations GROUP BY version ORDER BY version',
    )
    assert.deepEqual(
      rows,
      everything.map((version) => ({ version, times: '1' })),
    )
    for (const store of stores)
      assert.deepEqual(await store.schemaStatus(), {
        current: LATEST,
        latest: LATEST,
        compatibleFrom: LATEST,
      })
  })

  test('when `migrate` runs twice from the CLI, then the first applies every migration and the second nothing', async (t) => {
    const env = { DATABASE_URL: await emptyDatabase() }
    const cwd = temporaryDirectory(t)
    const first = await runCli(['migrate'], env, cwd)
    assert.equal(first.status, 0, first.stderr)
    assert.equal(
      first.stdout,
      `applied migrations ${postgresMigrations.map((m) => m.version).join(', ')}; schema version ${LATEST}\n`,
    )
    const second = await runCli(['migrate'], env, cwd)
    assert.equal(second.status, 0, second.stderr)
    assert.equal(second.stdout, `database is up to date (schema version ${LATEST})\n`)
  })

  test('when a statement runs past the statement timeout, then it rejects with StoreUnavailableError and the store carries on', async (t) => {
    const { store, admin } = await migratedStore(t, { statementTimeoutMs: 200 })
    const existing = await create(store, { name: 'Rex', categoryId: 1n })

    // A read stuck behind a lock another session holds…
    await admin.query('BEGIN')
    await admin.query('LOCK TABLE pets IN ACCESS EXCLUSIVE MODE')
    let started = performance.now()
    const stuck = await store.getPet(existing.id).then(
      () => assert.fail('the read did not time out'),
      (error: unknown) => error,
    )
    // The server cancels it (57014), well before the client-side timeout (one second later) would.
    assert.ok(stuck instanceof StoreUnavailableError, String(stuck))
    assert.equal((stuck.cause as { code?: string }).code, '57014')
    // Named as what it is: the operator looks at locks and slow statements, not at the network.
    assert.equal(stuck.message, 'a statement was cancelled (PG_STATEMENT_TIMEOUT_MS, or an operator)')
    assert.ok(
      performance.now() - started < 1000,
      `rejected after ${Math.round(performance.now() - started)} ms`,
    )
    await admin.query('ROLLBACK')

    // …and a create made slow by the database itself.
    await admin.query(`CREATE FUNCTION slow_insert() RETURNS trigger LANGUAGE plpgsql AS
      $$ BEGIN PERFORM pg_sleep(1); RETURN NEW; END $$`)
    await admin.query(
      'CREATE TRIGGER slow_insert BEFORE INSERT ON pets FOR EACH ROW EXECUTE FUNCTION slow_insert()',
    )
    started = performance.now()
    await assert.rejects(create(store, { name: 'Slow', categoryId: 1n }), StoreUnavailableError)
    assert.ok(performance.now() - started < 1000)
    await admin.query('DROP TRIGGER slow_insert ON pets')

    assert.deepEqual(await store.getPet(existing.id), existing, 'the store answers again')
    assert.equal((await create(store, { name: 'Fast', categoryId: 1n })).name, 'Fast')
    assert.deepEqual(
      (await store.listPets({ limit: 10 })).map((pet) => pet.name),
      ['Rex', 'Fast'],
      'the timed-out create left nothing behind',
    )
  })

  test("when the database's own lock_timeout ends a statement that waits for a lock, then it rejects with StoreUnavailableError naming the lock wait, not an unreachable database", async (t) => {
    const { url, store, admin } = await migratedStore(t)
    const existing = await create(store, { name: 'Rex', categoryId: 1n })
    // An operator's setting, which every new session of the database takes.
    await admin.query(`ALTER DATABASE "${new URL(url).pathname.slice(1)}" SET lock_timeout = '200ms'`)
    const later = storeOn(t, url)
    await admin.query('BEGIN')
    await admin.query('LOCK TABLE pets IN ACCESS EXCLUSIVE MODE')
    const stuck = await later.getPet(existing.id).then(
      () => assert.fail('the read did not wait for the lock'),
      (error: unknown) => error,
    )
    await admin.query('ROLLBACK')
    assert.ok(stuck instanceof StoreUnavailableError, String(stuck))
    assert.equal((stuck.cause as { code?: string }).code, '55P03')
    assert.equal(
      stuck.message,
      'a statement waited for a lock past lock_timeout (set on the database or its role)',
    )
    assert.deepEqual(await later.getPet(existing.id), existing, 'the store answers again')
  })
})
