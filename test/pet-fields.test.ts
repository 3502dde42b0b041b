import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { call } from './helpers/api-client.ts'
import { engineSuiteOptions, storeEngines } from './helpers/store-engines.ts'
import { startTestServer } from './helpers/test-server.ts'

interface FieldSchema {
  $ref?: string
  type?: string
  enum?: unknown[]
}

type Schemas = Record<string, FieldSchema & { properties?: Record<string, FieldSchema> }>

// What a field added to the schema but not to the store (or the idempotency fingerprint) fails with.
const ADDING_A_FIELD = 'README, "Adding a field to a pet", lists every place a field is kept'

/** Two different values a field of this schema takes (its first and second), from the served document. */
function valuesOf(schema: FieldSchema, schemas: Schemas): [unknown, unknown] {
  if (schema.$ref !== undefined) {
    return valuesOf(schemas[schema.$ref.split('/').at(-1) as string] as FieldSchema, schemas)
  }
  if (schema.enum !== undefined && schema.enum.length > 1) return [schema.enum[1], schema.enum[0]]
  switch (schema.type) {
    case 'string':
      return ['Sample', 'Other']
    case 'integer':
      return [42, 43]
    case 'number':
      return [1.5, 2.5]
    case 'boolean':
      return [true, false]
    default:
      throw new Error(`no sample for a field of type ${schema.type}: teach valuesOf this one`)
  }
}

for (const engine of storeEngines) {
  describe(`every field of a new pet (${engine.name})`, engineSuiteOptions(engine), () => {
    test('when a pet is created with every field the served document gives NewPet, then createPet, getPet and listPets return each as sent, and a retry with the same Idempotency-Key and any one field changed is refused with 422', async (t) => {
      const server = await startTestServer(t, { engine })
      const document = (await fetch(`${server.origin}/v1/openapi.json`).then((response) =>
        response.json(),
      )) as {
        components: { schemas: Schemas }
      }
      const schemas = document.components.schemas
      const fields = Object.entries(schemas.NewPet?.properties ?? {})
      assert.ok(fields.length >= 3, 'NewPet names its fields')
      const pet = Object.fromEntries(fields.map(([name, schema]) => [name, valuesOf(schema, schemas)[0]]))

      const created = await call(server, 'POST', '/v1/pets', {
        body: pet,
        headers: { 'idempotency-key': 'every-field' },
      })
      assert.equal(created.status, 201, created.text)
      const id = created.json.id as number
      const got = await call(server, 'GET', `/v1/pets/${id}`)
      const listed = (await call(server, 'GET', '/v1/pets?limit=100')).json as Record<string, unknown>[]
      for (const [name, value] of Object.entries(pet)) {
        assert.deepEqual(created.json[name], value, `createPet's answer lost "${name}" (${ADDING_A_FIELD})`)
        assert.deepEqual(
          got.json[name],
          value,
          `getPet lost "${name}": it was not stored (${ADDING_A_FIELD})`,
        )
        assert.deepEqual(
          listed.find((entry) => entry.id === id)?.[name],
          value,
          `listPets lost "${name}" (${ADDING_A_FIELD})`,
        )
      }

      for (const [name, schema] of fields) {
        const changed = { ...pet, [name]: valuesOf(schema, schemas)[1] }
        const retry = await call(server, 'POST', '/v1/pets', {
          body: changed,
          headers: { 'idempotency-key': 'every-field' },
        })
        assert.equal(
          retry.status,
          422,
          `a retry with "${name}" changed replayed the first pet: the idempotency fingerprint leaves it out (${ADDING_A_FIELD})`,
        )
      }
    })
  })
}
