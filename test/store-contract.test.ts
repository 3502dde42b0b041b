import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { StoreUnavailableError } from '../src/errors.ts'
import type { NewPet, Pet } from '../src/schemas/pet.ts'
import { DuplicateKeyNameError, type Store } from '../src/store/store.ts'
import { engineSuiteOptions, sqliteWriteThreadEngine, storeEngines } from './helpers/store-engines.ts'

/** Creates one pet, with no idempotency key, and resolves to it. */
async function createOne(store: Store, newPet: NewPet): Promise<Pet> {
  const result = await store.createPet({ pet: newPet })
  assert.equal(result.replayed, false)
  return result.pet
}

const pet = (name: string, categoryId: bigint, status?: NewPet['status']): NewPet =>
  status === undefined ? { name, categoryId } : { name, categoryId, status }

// SQLite's two ways of committing (the calling thread by default, a write thread when on) both keep it.
for (const engine of [...storeEngines, sqliteWriteThreadEngine]) {
  describe(`storage contract: ${engine.name}`, engineSuiteOptions(engine), () => {
    test('when migrate runs again, then it applies nothing and reports the same version', async (t) => {
      const { store } = await engine.open(t)
      const again = await store.migrate()
      assert.deepEqual(again.applied, [])
      assert.equal(again.current, (await store.schemaStatus()).latest)
    })

    test('when migrations are applied, then each is recorded with its compatibility floor', async (t) => {
      const { sql } = await engine.open(t)
      const rows = await sql('SELECT version, compatible_from FROM schema_migrations ORDER BY version')
      assert.deepEqual(
        rows.map((row) => [Number(row.version), Number(row.compatible_from)]),
        [
          [1, 1],
          [2, 2],
        ],
      )
    })

    test("when a newer release's migration keeps this release's schema working, then migrate applies nothing, reports the newer schema, and the store serves", async (t) => {
      const { store, reopen, sql } = await engine.open(t)
      const { latest } = await store.schemaStatus()
      await sql(
        `INSERT INTO schema_migrations (version, name, compatible_from) VALUES (${latest + 1}, 'additive', ${latest})`,
      )
      const again = await reopen()
      assert.deepEqual(await again.migrate(), {
        applied: [],
        current: latest + 1,
        latest,
        compatibleFrom: latest,
      })
      assert.deepEqual(await again.schemaStatus(), { current: latest + 1, latest, compatibleFrom: latest })
      assert.equal((await again.createPet({ pet: pet('Rex', 1n) })).pet.name, 'Rex')
    })

    test("when a newer release's migration needs a newer release, then migrate refuses, naming the schema it needs, and changes nothing", async (t) => {
      const { store, reopen, sql } = await engine.open(t)
      const { latest } = await store.schemaStatus()
      await sql(
        `INSERT INTO schema_migrations (version, name, compatible_from) VALUES (${latest + 1}, 'rewrites', ${latest + 1})`,
      )
      await assert.rejects(
        reopen(),
        new RegExp(
          `^Error: database schema version ${latest + 1} is newer than this release knows \\(${latest}\\) and needs a release made for schema ${latest + 1} or later$`,
        ),
      )
      assert.deepEqual(await store.schemaStatus(), {
        current: latest + 1,
        latest,
        compatibleFrom: latest + 1,
      })
      const [count] = await sql('SELECT count(*) AS n FROM schema_migrations')
      assert.equal(Number(count?.n), latest + 1)
    })

    test('when the bookkeeping predates compatibility floors (release 1.0.0), then migrate adds them, and a newer migration without one is taken to need its own schema', async (t) => {
      const { store, reopen, sql } = await engine.open(t)
      const { latest } = await store.schemaStatus()
      await sql('ALTER TABLE schema_migrations DROP COLUMN compatible_from')
      assert.equal((await store.migrate()).floorsColumnAdded, true, 'the run says what it added')
      assert.equal((await store.migrate()).floorsColumnAdded, undefined, 'once')
      await reopen()
      const rows = await sql('SELECT version, compatible_from FROM schema_migrations ORDER BY version')
      assert.deepEqual(
        rows.map((row) => row.compatible_from),
        [null, null],
        'rows of 1.0.0 keep no floor',
      )
      assert.deepEqual(await store.schemaStatus(), { current: latest, latest, compatibleFrom: latest })
      await sql(`INSERT INTO schema_migrations (version, name) VALUES (${latest + 1}, 'no floor')`)
      await assert.rejects(reopen(), new RegExp(`needs a release made for schema ${latest + 1} or later`))
    })

    test('when pets are created, then ids are distinct and ascending, and get returns them', async (t) => {
      const { store } = await engine.open(t)
      const first = await createOne(store, pet('Rex', 1n, 'available'))
      const second = await createOne(store, pet('Tom', 2n))
      assert.equal(typeof first.id, 'bigint')
      assert.ok(second.id > first.id)
      assert.deepEqual(await store.getPet(first.id), {
        id: first.id,
        name: 'Rex',
        categoryId: 1n,
        status: 'available',
      })
      assert.deepEqual(await store.getPet(second.id), { id: second.id, name: 'Tom', categoryId: 2n })
      assert.equal('status' in ((await store.getPet(second.id)) ?? {}), false, 'absent status stays absent')
      assert.equal(await store.getPet(second.id + 1000n), undefined)
    })

    test('when categoryId is at the int64 edges, then it is stored exactly', async (t) => {
      const { store } = await engine.open(t)
      for (const categoryId of [-(2n ** 63n), -(2n ** 53n) - 1n, 0n, 2n ** 53n + 1n, 2n ** 63n - 1n]) {
        const created = await createOne(store, pet('Edge', categoryId))
        assert.equal(created.categoryId, categoryId)
        assert.equal((await store.getPet(created.id))?.categoryId, categoryId)
      }
    })

    test('when listing, then pets come in id order, limited, and filtered by status', async (t) => {
      const { store } = await engine.open(t)
      const statuses = ['available', 'pending', 'sold', undefined] as const
      const created = []
      for (let i = 0; i < 30; i++)
        created.push(await createOne(store, pet(`p${i}`, BigInt(i), statuses[i % 4])))
      const page = await store.listPets({ limit: 10 })
      assert.deepEqual(
        page.map((p) => p.id),
        created.slice(0, 10).map((p) => p.id),
      )
      const sold = await store.listPets({ limit: 100, status: 'sold' })
      assert.deepEqual(
        sold.map((p) => p.id),
        created.filter((p) => p.status === 'sold').map((p) => p.id),
      )
      assert.equal((await store.listPets({ limit: 100 })).length, 30)
    })

    test('when 500 creates are issued at once, then all commit with distinct ids', async (t) => {
      const { store } = await engine.open(t)
      const created = await Promise.all(
        Array.from({ length: 500 }, (_, i) => createOne(store, pet(`c${i}`, BigInt(i)))),
      )
      assert.equal(new Set(created.map((p) => p.id)).size, 500)
      for (const [i, p] of created.entries()) assert.equal(p.name, `c${i}`)
      assert.equal((await store.listPets({ limit: 100 })).length, 100)
    })

    test('when the store is closed right after creates were issued, then every create is committed', async (t) => {
      const { store, reopen } = await engine.open(t)
      const pending = Array.from({ length: 50 }, (_, i) => createOne(store, pet(`late${i}`, 1n)))
      await store.close()
      const created = await Promise.all(pending)
      const again = await reopen()
      for (const p of created) assert.deepEqual(await again.getPet(p.id), p)
    })

    test('when the store is closed, then calls reject with StoreUnavailableError', async (t) => {
      const { store } = await engine.open(t)
      await store.close()
      await assert.rejects(store.getPet(1n), StoreUnavailableError)
      await assert.rejects(createOne(store, pet('x', 1n)), StoreUnavailableError)
    })

    test('when keys are created, found, listed and revoked, then only active keys are found', async (t) => {
      const { store } = await engine.open(t)
      const created = await store.createApiKey({ name: 'ci', hash: 'a'.repeat(64), hint: 'psk_abcd…' })
      assert.equal(created.name, 'ci')
      assert.equal(created.revokedAt, undefined)
      await assert.rejects(
        store.createApiKey({ name: 'ci', hash: 'b'.repeat(64), hint: 'x' }),
        DuplicateKeyNameError,
      )
      assert.deepEqual(await store.findActiveApiKey('a'.repeat(64)), { id: created.id, name: 'ci' })
      assert.equal(await store.findActiveApiKey('c'.repeat(64)), undefined)
      // Many at once, in the order asked, a hash asked twice answered twice.
      assert.deepEqual(await store.findActiveApiKeys(['c'.repeat(64), 'a'.repeat(64), 'a'.repeat(64)]), [
        undefined,
        { id: created.id, name: 'ci' },
        { id: created.id, name: 'ci' },
      ])
      assert.deepEqual(await store.findActiveApiKeys([]), [])

      assert.equal(await store.revokeApiKey('ci'), true)
      assert.equal(await store.revokeApiKey('ci'), false)
      assert.equal(await store.findActiveApiKey('a'.repeat(64)), undefined)
      assert.deepEqual(await store.findActiveApiKeys(['a'.repeat(64)]), [undefined])
      const [listed] = await store.listApiKeys()
      assert.ok(listed?.revokedAt)

      const replacement = await store.createApiKey({ name: 'ci', hash: 'b'.repeat(64), hint: 'psk_efgh…' })
      assert.notEqual(replacement.id, created.id, 'a revoked name can be reused by a new key')
    })

    test('when a configured key is ensured twice or after revocation, then it is neither duplicated nor revived', async (t) => {
      const { store } = await engine.open(t)
      const key = { name: 'deploy', hash: 'd'.repeat(64), hint: 'psk_dddd…' }
      await store.ensureApiKey(key)
      await store.ensureApiKey(key)
      assert.equal((await store.listApiKeys()).length, 1)
      await store.revokeApiKey('deploy')
      await store.ensureApiKey(key)
      assert.equal(await store.findActiveApiKey(key.hash), undefined)
      assert.equal(await store.apiKeyStored(key.hash), true, 'a revoked key is still known')
      assert.equal(await store.apiKeyStored('0'.repeat(64)), false)
      await assert.rejects(
        (async () => {
          await store.createApiKey({ name: 'taken', hash: 'e'.repeat(64), hint: 'x' })
          await store.ensureApiKey({ name: 'taken', hash: 'f'.repeat(64), hint: 'y' })
        })(),
        DuplicateKeyNameError,
      )
    })

    test('when listing after an id, then only later pets come, still in id order and filtered', async (t) => {
      const { store } = await engine.open(t)
      const created = []
      for (let i = 0; i < 10; i++)
        created.push(await createOne(store, pet(`p${i}`, 1n, i % 2 ? 'sold' : 'available')))
      const after = created[3]?.id as bigint
      assert.deepEqual(
        (await store.listPets({ limit: 100, afterId: after })).map((p) => p.id),
        created.slice(4).map((p) => p.id),
      )
      assert.deepEqual(
        (await store.listPets({ limit: 2, status: 'sold', afterId: after })).map((p) => p.id),
        created
          .filter((p, i) => i > 3 && p.status === 'sold')
          .slice(0, 2)
          .map((p) => p.id),
      )
    })

    test('when deprecated calls are recorded twice, then they add up and the latest call is kept', async (t) => {
      const { store } = await engine.open(t)
      const key = await store.createApiKey({ name: 'old-client', hash: 'c'.repeat(64), hint: 'psk_cccc…' })
      await store.recordDeprecatedCalls([{ apiKeyId: key.id, calls: 2, lastCallAtMs: Date.UTC(2027, 0, 2) }])
      await store.recordDeprecatedCalls([{ apiKeyId: key.id, calls: 3, lastCallAtMs: Date.UTC(2027, 0, 1) }])
      const [listed] = await store.listApiKeys()
      assert.equal(listed?.deprecatedCalls, 5)
      assert.equal(listed?.lastDeprecatedCallAt, '2027-01-02T00:00:00.000Z')
    })

    test('when the service secret is read twice or from another store on the same data, then it is the same', async (t) => {
      const { store, reopen } = await engine.open(t)
      const secret = await store.serviceSecret()
      assert.ok(secret.length >= 40)
      assert.equal(await store.serviceSecret(), secret)
      assert.equal(await (await reopen()).serviceSecret(), secret)
      const { store: elsewhere } = await engine.open(t)
      assert.notEqual(await elsewhere.serviceSecret(), secret)
    })
  })
}
