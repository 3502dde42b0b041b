import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { CreatePetRequest } from '../src/store/store.ts'
import { waitUntil } from './helpers/bounded-wait.ts'
import { create, holdInsertsOfSlow, someoneWaitsOn } from './helpers/postgres-held-inserts.ts'
import { migratedStore, storeOn } from './helpers/postgres-store-fixtures.ts'
import { engineSuiteOptions, postgresEngine } from './helpers/store-engines.ts'

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

describe('PostgreSQL store', engineSuiteOptions(postgresEngine), () => {
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
})
