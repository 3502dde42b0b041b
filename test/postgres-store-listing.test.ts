import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { listPetsStatement } from '../src/store/postgres/postgres-pet-queries.ts'
import type { PetQuery } from '../src/store/store.ts'
import { waitUntil } from './helpers/bounded-wait.ts'
import { create, holdInsertsOfSlow, someoneWaitsOn } from './helpers/postgres-held-inserts.ts'
import { migratedStore, storeOn } from './helpers/postgres-store-fixtures.ts'
import { engineSuiteOptions, postgresEngine } from './helpers/store-engines.ts'

describe('PostgreSQL store', engineSuiteOptions(postgresEngine), () => {
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
