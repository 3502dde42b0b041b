import assert from 'node:assert/strict'
import { DatabaseSync } from 'node:sqlite'
import { describe, test } from 'node:test'
import pino from 'pino'
import { INT64_MAX } from '../src/schemas/int64.ts'
import { call } from './helpers/api-client.ts'
import {
  engineSuiteOptions,
  postgresSql,
  type StoreEngine,
  sqliteWriteThreadEngine,
  storeEngines,
} from './helpers/store-engines.ts'
import { startTestServer } from './helpers/test-server.ts'

/** Makes the store's next pet id `next`, as if every id below it had been given out. */
async function nextPetIdIs(databaseUrl: string, next: bigint): Promise<void> {
  if (databaseUrl.startsWith('sqlite:')) {
    const db = new DatabaseSync(databaseUrl.slice('sqlite:'.length))
    db.exec(`UPDATE sqlite_sequence SET seq = ${next - 1n} WHERE name = 'pets'`)
    db.close()
  } else {
    await postgresSql(databaseUrl, `SELECT setval(pg_get_serial_sequence('pets', 'id'), ${next - 1n})`)
  }
}

for (const engine of [...storeEngines, sqliteWriteThreadEngine] as StoreEngine[]) {
  describe(`${engine.name}: every pet id given out`, engineSuiteOptions(engine), () => {
    test('when the largest int64 id has been given out, then a create is 507 pet_ids_exhausted, nothing is stored, reads go on, and the condition is logged once', async (t) => {
      const lines: Array<Record<string, unknown>> = []
      const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) })
      const server = await startTestServer(t, { engine, app: { logger } })
      const create = (name: string, headers: Record<string, string> = {}) =>
        call(server, 'POST', '/v1/pets', { body: { name, categoryId: 1 }, headers })
      assert.equal((await create('first')).status, 201)
      await nextPetIdIs(server.databaseUrl as string, INT64_MAX)
      const last = await create('last')
      assert.equal(last.status, 201, last.text)
      assert.match(last.text, new RegExp(`"id":${INT64_MAX}[,}]`))

      for (const headers of [{}, { 'idempotency-key': 'after-the-last' }] as Record<string, string>[]) {
        const refused = await create('beyond', headers)
        assert.equal(refused.status, 507, refused.text)
        assert.equal(refused.json.code, 'pet_ids_exhausted')
        assert.equal(refused.json.message, `every pet id, up to ${INT64_MAX}, has been given out`)
        // Nothing a retry could mend soon: no Retry-After.
        assert.equal(refused.headers.get('retry-after'), null)
      }
      // Every create from now on meets it: one line with the error when it starts, not one per create.
      const started = lines.filter((line) => line.level === 50)
      assert.equal(started.length, 1, JSON.stringify(started))
      assert.equal(started[0]?.condition, `every pet id, up to ${INT64_MAX}, has been given out`)
      // It never passes: no quiet spell ends it (a create every few seconds would log it again each time).
      assert.match(String(started[0]?.msg), /requests that meet it are answered 507 from now on$/)
      const requestLines = lines.filter((line) => line.msg === 'request' && line.condition !== undefined)
      assert.equal(requestLines.length, 2, 'each refused create names it on its own line')
      const listed = await call(server, 'GET', '/v1/pets')
      assert.deepEqual(
        listed.json.map((pet: { name: string }) => pet.name),
        ['first', 'last'],
      )
    })

    test('when fewer ids are left than creates arrive together, then the first take them and the rest are 507, a keyed retry among them replayed', async (t) => {
      const server = await startTestServer(t, { engine })
      const create = (name: string, headers: Record<string, string> = {}) =>
        call(server, 'POST', '/v1/pets', { body: { name, categoryId: 1 }, headers })
      const kept = await create('kept', { 'idempotency-key': 'kept' })
      assert.equal(kept.status, 201)
      await nextPetIdIs(server.databaseUrl as string, INT64_MAX - 1n)
      // Sent together: one batch (one transaction) asking for more ids than are left.
      const answers = await Promise.all([
        create('a'),
        create('kept', { 'idempotency-key': 'kept' }),
        create('b'),
        create('c'),
        create('d'),
      ])
      const statuses = answers.map((answer) => answer.status)
      assert.equal(answers[1]?.status, 201, 'the retry is replayed')
      assert.equal(answers[1]?.text, kept.text)
      assert.deepEqual(
        statuses.filter((status) => status !== 201 && status !== 507),
        [],
        `only 201 and 507: ${statuses}`,
      )
      // Two ids were left, and went to new pets; on PostgreSQL the batch's failed try used them up (a
      // sequence never gives an id twice, even one whose insert was rolled back).
      const listed = await call(server, 'GET', '/v1/pets?limit=10')
      const ids = [...listed.text.matchAll(/"id":(\d+)/g)].map((match) => match[1]).slice(1)
      const left = [String(INT64_MAX - 1n), String(INT64_MAX)]
      if (engine.name.startsWith('sqlite')) assert.deepEqual(ids, left, listed.text)
      else
        assert.ok(
          ids.every((id) => left.includes(id ?? '')),
          listed.text,
        )
      assert.equal(statuses.filter((status) => status === 201).length, 1 + ids.length)
    })
  })
}
