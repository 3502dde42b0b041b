import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import type pg from 'pg'
import { StoreUnavailableError } from '../src/errors.ts'
import type { NewPet, Pet } from '../src/schemas/pet.ts'
import { postgresMigrations } from '../src/store/postgres/postgres-migrations.ts'
import { listPetsStatement } from '../src/store/postgres/postgres-pet-queries.ts'
import type { PostgresStore } from '../src/store/postgres/postgres-store.ts'
import type { CreatePetRequest, PetQuery } from '../src/store/store.ts'
import { waitUntil } from './helpers/bounded-wait.ts'
import { temporaryDirectory } from './helpers/cleanup.ts'
import { runCli } from './helpers/cli-process.ts'
import { adminOn, emptyDatabase, migratedStore, storeOn } from './helpers/postgres-store-fixtures.ts'
import { engineSuiteOptions, postgresEngine } from './helpers/store-engines.ts'

const LATEST = postgresMigrations.at(-1)?.version ?? 0

const create = async (store: PostgresStore, pet: NewPet): Promise<Pet> => (await store.createPet({ pet })).pet
/** A create with an Idempotency-Key of API key 1, live for a minute; the pet is named after the key. */
const keyed = (key: string, name = key): CreatePetRequest => ({
  pet: { name, categoryId: 1n },
  idempotency: {
    apiKeyId: 1n,
    idempotencyKey: key,
    fingerprint: 'f',
    requestedAtMs: Date.now(),
    expiresAtMs: Date.now() + 60_000,
  },
})

/** From now on, the insert of a pet named 'slow' sleeps 1 s in its transaction, its id already drawn. */
async function holdInsertsOfSlow(admin: pg.Client): Promise<void> {
  await admin.query(`CREATE FUNCTION hold_slow() RETURNS trigger LANGUAGE plpgsql AS
    $$ BEGIN IF NEW.name = 'slow' THEN PERFORM pg_sleep(1); END IF; RETURN NEW; END $$`)
  await admin.query(
    'CREATE TRIGGER hold_slow BEFORE INSERT ON pets FOR EACH ROW EXECUTE FUNCTION hold_slow()',
  )
}

/** Whether a session on the database waits on `event` (pg_stat_activity's wait_event). */
async function someoneWaitsOn(admin: pg.Client, event: string): Promise<boolean> {
  const { rowCount } = await admin.query(
    'SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event = $1',
    [event],
  )
  return rowCount !== 0
}

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

  test('when ids are above 2^53, then created, fetched and listed pets keep them exactly', async (t) => {
    const { store, admin } = await migratedStore(t)
    await admin.query('ALTER TABLE pets ALTER COLUMN id RESTART WITH 9007199254740993')
    const first = await create(store, { name: 'Big', categoryId: 1n })
    const second = await create(store, { name: 'Bigger', categoryId: 2n, status: 'sold' })
    assert.equal(first.id, 9007199254740993n)
    assert.equal(second.id, 9007199254740994n)
    assert.deepEqual(await store.getPet(9007199254740993n), {
      id: 9007199254740993n,
      name: 'Big',
      categoryId: 1n,
    })
    assert.deepEqual(await store.listPets({ limit: 10 }), [first, second])
    assert.deepEqual(await store.listPets({ limit: 10, afterId: 9007199254740993n }), [second])
    assert.deepEqual(await store.listPets({ limit: 10, status: 'sold', afterId: 9007199254740992n }), [
      second,
    ])

    await admin.query('ALTER TABLE pets ALTER COLUMN id RESTART WITH 9223372036854775807')
    const last = await create(store, { name: 'Last', categoryId: 3n })
    assert.equal(last.id, 2n ** 63n - 1n)
    assert.deepEqual(await store.getPet(2n ** 63n - 1n), last)
    assert.deepEqual(await store.listPets({ limit: 10, afterId: second.id }), [last])
  })

  test('when the last id has been given out, then a create with a stored Idempotency-Key still replays its pet, and a new one fails', async (t) => {
    const { store, admin } = await migratedStore(t)
    await admin.query('ALTER TABLE pets ALTER COLUMN id RESTART WITH 9223372036854775807')
    const last = await store.createPet(keyed('last'))
    assert.equal(last.pet.id, 2n ** 63n - 1n)
    assert.deepEqual(await store.createPet(keyed('last')), { pet: last.pet, replayed: true })
    await assert.rejects(store.createPet(keyed('beyond')), /every pet id has been given out/)
  })

  test('when a batch of creates carries idempotency keys, then each pet gets its own id, in request order, and each key replays its own pet', async (t) => {
    const { store } = await migratedStore(t)
    const requests = Array.from({ length: 100 }, (_, i) => ({
      pet: { name: `p${i}`, categoryId: BigInt(i) },
      idempotency: {
        apiKeyId: 1n,
        idempotencyKey: `k${i}`,
        fingerprint: `f${i}`,
        requestedAtMs: Date.now(),
        expiresAtMs: Date.now() + 60_000,
      },
    }))
    // Submitted together, so they are committed as one batch (one insert statement).
    const created = await Promise.all(requests.map((request) => store.createPet(request)))
    for (const [i, { pet, replayed }] of created.entries()) {
      assert.equal(replayed, false)
      assert.equal(pet.name, `p${i}`)
      if (i > 0) assert.ok(pet.id > (created[i - 1]?.pet.id ?? 0n), 'ids ascend in request order')
    }
    const replays = await Promise.all([...requests].reverse().map((request) => store.createPet(request)))
    for (const [j, replay] of replays.entries()) {
      assert.deepEqual(replay, { pet: created[requests.length - 1 - j]?.pet, replayed: true })
    }
  })

  test('when another instance stores a key while a batch with the same key waits for the insert lock, then the batch replays that pet and creates none', async (t) => {
    const { url, store: first, admin } = await migratedStore(t)
    const second = storeOn(t, url)
    // The first instance's insert sleeps after taking the insert lock, holding it until it commits.
    await holdInsertsOfSlow(admin)
    const original = first.createPet(keyed('shared', 'slow'))
    await waitUntil(() => someoneWaitsOn(admin, 'PgSleep'), 'the first insert never started')
    // The retry's statement starts while the key has no record, and waits for the lock.
    const retry = second.createPet(keyed('shared', 'retry'))
    await waitUntil(() => someoneWaitsOn(admin, 'advisory'), 'the retry never waited for the insert lock')
    const [made, replayed] = await Promise.all([original, retry])
    assert.equal(made.replayed, false)
    assert.deepEqual(replayed, { pet: made.pet, replayed: true })
    assert.deepEqual(
      (await first.listPets({ limit: 10 })).map((pet) => pet.name),
      ['slow'],
    )
  })

  test('when the Idempotency-Key records grow from none to thousands, then keyed creates still find them through the primary key, never by scanning the table', async (t) => {
    const { store, admin } = await migratedStore(t)
    // Each batch carries a retry of a key stored before, so each reads its records: a batch of new keys
    // alone is written without reading them.
    const keyedBatches = async (label: string) => {
      // More batches than the five executions after which PostgreSQL may keep a prepared statement's plan.
      for (let round = 0; round < 10; round++) {
        const [retry] = await Promise.all([
          store.createPet(keyed('first')),
          ...Array.from({ length: 5 }, (_, i) => store.createPet(keyed(`${label}-${round}-${i}`))),
        ])
        assert.deepEqual(retry, { pet: first.pet, replayed: true }, 'the retry replays the pet its key made')
      }
    }
    const counters = async () => {
      await admin.query('SELECT pg_stat_force_next_flush()')
      // Rows read by sequential scans (the migration's index builds scanned the table while it was empty).
      const { rows } = await admin.query<{ seq_tup_read: string; n_tup_ins: string }>(
        "SELECT seq_tup_read, n_tup_ins FROM pg_stat_user_tables WHERE relname = 'idempotency_keys'",
      )
      return { scannedRows: Number(rows[0]?.seq_tup_read), inserted: Number(rows[0]?.n_tup_ins) }
    }
    const first = await store.createPet(keyed('first'))
    // While the table is small, any plan is cheap: the ones the store's connections settle on are made here.
    await keyedBatches('early')
    // Then it grows, as a day of keyed creates makes it grow, between two of autovacuum's visits.
    await admin.query(
      `INSERT INTO idempotency_keys SELECT 1, 'old-' || i, 'f', 1, $1 FROM generate_series(1, 20000) AS i`,
      [Date.now() + 3_600_000],
    )
    await waitUntil(
      async () => (await counters()).inserted >= 20_050,
      'the setup never reached the statistics',
    )
    const before = await counters()
    await keyedBatches('late')
    // Its connections end, and report what they did as they go.
    await store.close()
    await waitUntil(
      async () => (await counters()).inserted >= before.inserted + 50,
      "the store's work never reached the statistics",
    )
    assert.equal((await counters()).scannedRows, before.scannedRows, 'no batch scanned the table')
  })

  test('when listing from a few thousand pets, then the plans walk the primary key or the (status, id) index, never a Seq Scan', async (t) => {
    const { admin } = await migratedStore(t)
    // Mostly available, few pending: a status must be read from the (status, id) index, whichever it is
    // (a generic plan cannot tell a rare status from a common one).
    await admin.query(`INSERT INTO pets (name, category_id, status)
      SELECT 'p' || i, i, CASE WHEN i % 50 = 0 THEN 'pending' WHEN i % 3 = 0 THEN NULL ELSE 'available' END
      FROM generate_series(1, 5000) AS i`)
    await admin.query('ANALYZE pets')
    const cases: Array<[PetQuery, string]> = [
      [{ limit: 21 }, 'pets_pkey'],
      [{ limit: 21, afterId: 2500n }, 'pets_pkey'],
      [{ limit: 21, status: 'available' }, 'pets_status_id'],
      [{ limit: 21, status: 'pending' }, 'pets_status_id'],
      [{ limit: 21, status: 'pending', afterId: 2500n }, 'pets_status_id'],
    ]
    for (const [query, index] of cases) {
      const { text, values } = listPetsStatement(query)
      // The store's named statements may be planned per call or once generically: both must use the index.
      const custom = await admin.query(`EXPLAIN (FORMAT JSON) ${text}`, values)
      await admin.query(`PREPARE listing AS ${text}`)
      await admin.query('SET plan_cache_mode = force_generic_plan')
      const literals = (values ?? []).map((value) => admin.escapeLiteral(String(value))).join(', ')
      const generic = await admin.query(`EXPLAIN (FORMAT JSON) EXECUTE listing(${literals})`)
      await admin.query('DEALLOCATE listing')
      await admin.query('RESET plan_cache_mode')
      for (const [mode, result] of [
        ['custom', custom],
        ['generic', generic],
      ] as const) {
        const nodes = planNodes(result.rows[0]['QUERY PLAN'][0].Plan)
        const label = `${mode} plan of ${JSON.stringify(query, (_, v) => (typeof v === 'bigint' ? String(v) : v))}`
        assert.deepEqual(
          nodes.filter((node) => node['Node Type'] === 'Seq Scan' || node['Node Type'] === 'Sort'),
          [],
          label,
        )
        assert.ok(
          nodes.some((node) => node['Index Name'] === index),
          `${label} uses ${index}: ${JSON.stringify(nodes.map((n) => [n['Node Type'], n['Index Name']]))}`,
        )
      }
    }
  })

  test('when a batch has taken an id but not committed, then a later batch waits, and a reader never sees the later id first', async (t) => {
    const { url, store: slowStore, admin } = await migratedStore(t)
    const [fastStore, reader] = [storeOn(t, url), storeOn(t, url)]
    // The trigger runs after the id is drawn, inside the inserting transaction: it holds that id uncommitted.
    await holdInsertsOfSlow(admin)
    const slow = create(slowStore, { name: 'slow', categoryId: 1n })
    await waitUntil(() => someoneWaitsOn(admin, 'PgSleep'), 'the slow insert never started')
    let settled = false
    const both = Promise.all([slow, create(fastStore, { name: 'fast', categoryId: 1n })]).finally(() => {
      settled = true
    })
    const snapshots: string[][] = []
    const deadline = Date.now() + 10_000
    while (!settled) {
      assert.ok(Date.now() < deadline, 'the two creates did not finish within 10 s')
      snapshots.push((await reader.listPets({ limit: 10 })).map((pet) => pet.name))
      await sleep(20)
    }
    const [slowPet, fastPet] = await both
    assert.ok(fastPet.id > slowPet.id, 'the later batch drew a later id')
    assert.ok(snapshots.length > 5)
    for (const names of snapshots) {
      assert.ok(!names.includes('fast') || names.includes('slow'), 'the later id was never seen first')
    }
  })

  test('when two stores insert in many batches while a reader follows by id, then the reader misses no pet', async (t) => {
    const { url, store: first, admin } = await migratedStore(t)
    const [second, reader] = [storeOn(t, url), storeOn(t, url)]
    // A few milliseconds of jitter per row inside each inserting transaction, so commit order would vary.
    await admin.query(`CREATE FUNCTION jitter() RETURNS trigger LANGUAGE plpgsql AS
      $$ BEGIN PERFORM pg_sleep(random() * 0.003); RETURN NEW; END $$`)
    await admin.query('CREATE TRIGGER jitter BEFORE INSERT ON pets FOR EACH ROW EXECUTE FUNCTION jitter()')
    let writing = true
    const writers = Promise.all(
      [first, second].map(async (store, s) => {
        for (let round = 0; round < 40; round++) {
          await Promise.all(
            Array.from({ length: 1 + (round % 7) }, (_, i) =>
              create(store, { name: `s${s} r${round} ${i}`, categoryId: 1n }),
            ),
          )
        }
      }),
    ).finally(() => {
      writing = false
    })
    // A client paging with cursors: each call continues after the last id it has seen.
    const followed: bigint[] = []
    const deadline = Date.now() + 20_000
    for (let done = false; !done; ) {
      assert.ok(Date.now() < deadline, `the follower did not catch up within 20 s (${followed.length} seen)`)
      const finished = !writing
      const page = await reader.listPets({ limit: 25, afterId: followed.at(-1) })
      followed.push(...page.map((pet) => pet.id))
      if (page.length === 0) {
        done = finished
        await sleep(2)
      }
    }
    await writers
    const all = (await reader.listPets({ limit: 10_000 })).map((pet) => pet.id)
    assert.equal(all.length, 2 * [...Array(40).keys()].reduce((sum, round) => sum + 1 + (round % 7), 0))
    assert.deepEqual(followed, all, 'every pet was seen by the follower, in id order')
  })
})

interface PlanNode {
  'Node Type': string
  'Index Name'?: string
  Plans?: PlanNode[]
}

function planNodes(node: PlanNode): PlanNode[] {
  return [node, ...(node.Plans ?? []).flatMap(planNodes)]
}
