import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { storedFormOf } from '../src/auth/api-key.ts'
import { NewerSchemaError } from '../src/errors.ts'
import { engineSuiteOptions, storeEngines } from './helpers/store-engines.ts'

for (const engine of storeEngines) {
  describe(`${engine.name}: a schema only a newer release may run on`, engineSuiteOptions(engine), () => {
    test('when the store reads such a schema, then every write is refused with NewerSchemaError and reads go on; once it reads a schema it runs on, writes go on', async (t) => {
      const { store, sql } = await engine.open(t)
      await store.createPet({ pet: { name: 'Before', categoryId: 1n } })
      const { latest } = await store.schemaStatus()
      await sql(
        `INSERT INTO schema_migrations (version, name, compatible_from) VALUES (${latest + 1}, 'rewrites', ${latest + 1})`,
      )
      await store.schemaStatus()
      const key = storedFormOf('later', 'psk_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA')
      const writes = {
        createPet: () => store.createPet({ pet: { name: 'Refused', categoryId: 1n } }),
        createApiKey: () => store.createApiKey(key),
        ensureApiKey: () => store.ensureApiKey(key),
        revokeApiKey: () => store.revokeApiKey('later'),
        recordDeprecatedCalls: () =>
          store.recordDeprecatedCalls([{ apiKeyId: 1n, calls: 1, lastCallAtMs: 1 }]),
        purgeIdempotencyRecords: () => store.purgeIdempotencyRecords(Date.now()),
      }
      for (const [name, write] of Object.entries(writes)) {
        await assert.rejects(write(), NewerSchemaError, name)
      }
      assert.deepEqual(
        (await store.listPets({ limit: 10 })).map((pet) => pet.name),
        ['Before'],
      )

      await sql(`DELETE FROM schema_migrations WHERE version = ${latest + 1}`)
      await store.schemaStatus()
      assert.equal((await store.createPet({ pet: { name: 'After', categoryId: 1n } })).pet.name, 'After')
    })
  })
}
