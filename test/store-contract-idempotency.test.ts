import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { NewPet } from '../src/schemas/pet.ts'
import { PURGE_CHUNK_ROWS } from '../src/store/shared/chunked-purge.ts'
import { IdempotencyKeyReusedError, type IdempotencyRecord, type Store } from '../src/store/store.ts'
import { engineSuiteOptions, sqliteWriteThreadEngine, storeEngines } from './helpers/store-engines.ts'

const pet = (name: string, categoryId: bigint, status?: NewPet['status']): NewPet =>
  status === undefined ? { name, categoryId } : { name, categoryId, status }

const recordFor = (key: string, expiresAtMs: number): IdempotencyRecord => ({
  apiKeyId: 1n,
  idempotencyKey: key,
  fingerprint: `fingerprint of ${key}`,
  requestedAtMs: 1000,
  expiresAtMs,
})

/** Creates `count` pets whose idempotency keys expire at 10,000 ms and after (all before 1,000,000). */
async function createWithExpiringKeys(store: Store, count: number): Promise<void> {
  await Promise.all(
    Array.from({ length: count }, (_, i) =>
      store.createPet({ pet: pet(`e${i}`, 1n), idempotency: recordFor(`e${i}`, 10_000 + i) }),
    ),
  )
}

// Both engines, and SQLite's write thread, keep each create's idempotency record with its pet.
for (const engine of [...storeEngines, sqliteWriteThreadEngine]) {
  describe(`storage contract, idempotency: ${engine.name}`, engineSuiteOptions(engine), () => {
    test('when creates in one batch share an idempotency key, then the first creates and the rest replay or are refused', async (t) => {
      const { store } = await engine.open(t)
      const record = (fingerprint: string) => ({
        apiKeyId: 1n,
        idempotencyKey: 'k',
        fingerprint,
        requestedAtMs: 1000,
        expiresAtMs: 100_000,
      })
      const [first, same, other] = await Promise.allSettled([
        store.createPet({ pet: pet('A', 1n), idempotency: record('f1') }),
        store.createPet({ pet: pet('A', 1n), idempotency: record('f1') }),
        store.createPet({ pet: pet('B', 1n), idempotency: record('f2') }),
      ])
      assert.equal(first.status === 'fulfilled' && first.value.replayed, false)
      assert.equal(same.status === 'fulfilled' && same.value.replayed, true)
      assert.deepEqual(
        same.status === 'fulfilled' && same.value.pet,
        first.status === 'fulfilled' && first.value.pet,
      )
      assert.ok(other.status === 'rejected' && other.reason instanceof IdempotencyKeyReusedError)
      assert.equal((await store.listPets({ limit: 10 })).length, 1)
      assert.equal(await store.purgeIdempotencyRecords(99_999), 0)
      assert.equal(await store.purgeIdempotencyRecords(100_000), 1)
    })

    test('when one batch mixes retries, new keys, a key repeated within it and creates without a key, then every key keeps its own pet', async (t) => {
      const { store } = await engine.open(t)
      const keyed = (key: string) => ({ pet: pet(`pet of ${key}`, 1n), idempotency: recordFor(key, 100_000) })
      const stored = await Promise.all(['s1', 's2'].map((key) => store.createPet(keyed(key))))
      // Submitted together: one batch, retries and new keys interleaved, so the pets to insert are not
      // the batch's first positions.
      const batch = [
        keyed('s1'),
        { pet: pet('no key 1', 2n) },
        keyed('n1'),
        keyed('s2'),
        keyed('n2'),
        keyed('n1'),
        { pet: pet('no key 2', 3n, 'sold') },
        keyed('n3'),
      ]
      const outcomes = await Promise.all(batch.map((request) => store.createPet(request)))
      assert.deepEqual(
        outcomes.map(({ pet, replayed }) => [pet.name, replayed]),
        [
          ['pet of s1', true],
          ['no key 1', false],
          ['pet of n1', false],
          ['pet of s2', true],
          ['pet of n2', false],
          ['pet of n1', true],
          ['no key 2', false],
          ['pet of n3', false],
        ],
      )
      assert.deepEqual(outcomes[0]?.pet, stored[0]?.pet)
      assert.deepEqual(outcomes[3]?.pet, stored[1]?.pet)
      assert.deepEqual(outcomes[5]?.pet, outcomes[2]?.pet)
      // Each key, retried once more in a batch of its own, replays the pet it made.
      for (const key of ['s1', 's2', 'n1', 'n2', 'n3']) {
        const retry = await store.createPet(keyed(key))
        assert.equal(retry.replayed, true)
        assert.equal(retry.pet.name, `pet of ${key}`, `key ${key} replays its own pet`)
        assert.deepEqual(await store.getPet(retry.pet.id), retry.pet)
      }
      assert.equal((await store.listPets({ limit: 20 })).length, 7)
    })

    test('when more expired idempotency keys than one chunk are purged, then all of them go and live ones stay', async (t) => {
      const { store } = await engine.open(t)
      const expired = PURGE_CHUNK_ROWS * 2 + 500
      await createWithExpiringKeys(store, expired)
      const live = await store.createPet({ pet: pet('live', 1n), idempotency: recordFor('live', 1_000_000) })
      assert.equal(await store.purgeIdempotencyRecords(999_999), expired)
      assert.equal(await store.purgeIdempotencyRecords(999_999), 0)
      const retry = await store.createPet({
        pet: pet('live', 1n),
        idempotency: { ...recordFor('live', 2_000_000), requestedAtMs: 2000 },
      })
      assert.deepEqual(retry, { pet: live.pet, replayed: true }, 'a key not yet expired still replays')
    })

    test('when a key whose record expired, not yet purged, comes again, then it makes a new pet that its retry replays', async (t) => {
      const { store } = await engine.open(t)
      const first = await store.createPet({ pet: pet('first', 1n), idempotency: recordFor('again', 5_000) })
      const reused: IdempotencyRecord = {
        ...recordFor('again', 100_000),
        fingerprint: 'another body',
        requestedAtMs: 10_000,
      }
      const second = await store.createPet({ pet: pet('second', 2n), idempotency: reused })
      assert.equal(second.replayed, false)
      assert.notEqual(second.pet.id, first.pet.id)
      const retry = await store.createPet({
        pet: pet('second', 2n),
        idempotency: { ...reused, requestedAtMs: 20_000 },
      })
      assert.deepEqual(retry, { pet: second.pet, replayed: true }, 'the retry replays the new pet')
      assert.equal((await store.listPets({ limit: 10 })).length, 2)
      assert.equal(await store.purgeIdempotencyRecords(99_999), 0, 'the record took its new expiry')
      assert.equal(await store.purgeIdempotencyRecords(100_000), 1)
    })

    test('when a purge is aborted while it runs, then it stops after the chunk in progress', async (t) => {
      const { store } = await engine.open(t)
      await createWithExpiringKeys(store, PURGE_CHUNK_ROWS * 3)
      const controller = new AbortController()
      const purging = store.purgeIdempotencyRecords(999_999, controller.signal)
      controller.abort()
      assert.equal(await purging, PURGE_CHUNK_ROWS)
      assert.equal(await store.purgeIdempotencyRecords(999_999), PURGE_CHUNK_ROWS * 2)
    })
  })
}
