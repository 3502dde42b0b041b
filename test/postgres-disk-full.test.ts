import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { chownSync } from 'node:fs'
import { describe, test } from 'node:test'
import { call } from './helpers/api-client.ts'
import { fillFileSystem, mountingSuiteOptions, mountTmpfs } from './helpers/storage-faults.ts'
import { engineSuiteOptions, postgresEngine, postgresSql } from './helpers/store-engines.ts'
import { type Cleanup, startTestServer, type TestServer } from './helpers/test-server.ts'

const MAX_CREATES_UNTIL_FULL = 2000

/**
 * Puts the server's pets on a small file system of their own (a tablespace on a tmpfs), as a data volume
 * that fills up: PostgreSQL then refuses to extend the table (SQLSTATE 53100), and reads go on.
 */
async function petsOnSmallVolume(t: Cleanup, server: TestServer) {
  // Unmounted only once the table has left it (a cleanup of its own would run first).
  const unmount: Array<() => unknown> = []
  const directory = mountTmpfs(
    { after: (fn: () => unknown) => void unmount.push(fn) } as Cleanup,
    1024 * 1024,
  )
  const postgresUser = Number(spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).stdout.trim())
  chownSync(directory, postgresUser, postgresUser)
  const url = server.databaseUrl as string
  const tablespace = `small_${process.pid}_${Date.now()}`
  await postgresSql(url, `CREATE TABLESPACE ${tablespace} LOCATION '${directory}'`)
  // Before the tmpfs goes: the table back on the default volume, the tablespace dropped.
  t.after(async () => {
    try {
      await postgresSql(url, 'ALTER TABLE pets SET TABLESPACE pg_default')
      await postgresSql(url, `DROP TABLESPACE ${tablespace}`)
    } finally {
      for (const done of unmount) await done()
    }
  })
  await postgresSql(url, `ALTER TABLE pets SET TABLESPACE ${tablespace}`)
  return directory
}

const keyed = (server: TestServer, key: string, name = 'Rex') =>
  call(server, 'POST', '/v1/pets', { body: { name, categoryId: 1 }, headers: { 'idempotency-key': key } })

describe('a PostgreSQL database whose disk is full', {
  ...engineSuiteOptions(postgresEngine),
  ...mountingSuiteOptions(),
}, () => {
  test('when the disk holding the pets is full, then creates get 503, a create retried with its Idempotency-Key gets its pet again, and reads go on', async (t) => {
    if (process.env.PETSTORE_TEST_POSTGRES_URL !== undefined) {
      t.skip('the server named by PETSTORE_TEST_POSTGRES_URL is not on this machine: no tablespace here')
      return
    }
    const server = await startTestServer(t, { engine: postgresEngine })
    const directory = await petsOnSmallVolume(t, server)
    const bodies = new Map<string, string>()
    for (const key of ['order-1', 'order-2']) bodies.set(key, (await keyed(server, key)).text)
    fillFileSystem(directory)
    let refused: Awaited<ReturnType<typeof call>> | undefined
    for (let i = 0; i < MAX_CREATES_UNTIL_FULL && refused === undefined; i++) {
      const created = await call(server, 'POST', '/v1/pets', { body: { name: `pet-${i}`, categoryId: 1 } })
      if (created.status !== 201) refused = created
    }
    assert.ok(refused, `no create was refused in ${MAX_CREATES_UNTIL_FULL} on a full disk`)
    assert.equal(refused.status, 503, refused.text)
    assert.equal(refused.headers.get('retry-after'), '1')

    // Together, so that retries share a batch with creates that cannot be written.
    const answers = await Promise.all([
      keyed(server, 'order-1'),
      keyed(server, 'new-1'),
      keyed(server, 'order-2'),
    ])
    for (const [index, key] of ['order-1', 'order-2'].entries()) {
      const answer = answers[index * 2] as Awaited<ReturnType<typeof call>>
      assert.equal(answer.status, 201, `retry of ${key}: ${answer.text}`)
      assert.equal(answer.text, bodies.get(key))
      assert.equal(answer.headers.get('idempotent-replayed'), 'true')
    }
    assert.equal(answers[1]?.status, 503, answers[1]?.text)
    assert.equal((await keyed(server, 'order-1', 'Other')).json.code, 'idempotency_key_reused')
    assert.equal((await call(server, 'GET', '/v1/pets?limit=5')).status, 200, 'reads need no room')
  })
})
