import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { chownSync } from 'node:fs'
import { describe, type TestContext, test } from 'node:test'
import type { CreatePetRequest, Store } from '../src/store/store.ts'
import { call } from './helpers/api-client.ts'
import { fillFileSystem, mountingSuiteOptions, mountTmpfs } from './helpers/storage-faults.ts'
import { engineSuiteOptions, postgresEngine, postgresSql } from './helpers/store-engines.ts'
import { type Cleanup, startTestServer, type TestServer } from './helpers/test-server.ts'

const MAX_CREATES_UNTIL_FULL = 20_000

/**
 * Puts `relation` (`TABLE pets`, `INDEX idempotency_keys_pkey`) on a small file system of its own (a
 * tablespace on a tmpfs), as a data volume that fills up: PostgreSQL then refuses to extend it (SQLSTATE
 * 53100), and reads go on. Returns the directory, to fill.
 */
async function onSmallVolume(t: Cleanup, url: string, relation: string): Promise<string> {
  // Unmounted only once the relation has left it (a cleanup of its own would run first).
  const unmount: Array<() => unknown> = []
  const directory = mountTmpfs(
    { after: (fn: () => unknown) => void unmount.push(fn) } as Cleanup,
    1024 * 1024,
  )
  const postgresUser = Number(spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).stdout.trim())
  chownSync(directory, postgresUser, postgresUser)
  const tablespace = `small_${process.pid}_${Date.now()}`
  await postgresSql(url, `CREATE TABLESPACE ${tablespace} LOCATION '${directory}'`)
  t.after(async () => {
    try {
      await postgresSql(url, `ALTER ${relation} SET TABLESPACE pg_default`)
      await postgresSql(url, `DROP TABLESPACE ${tablespace}`)
    } finally {
      for (const done of unmount) await done()
    }
  })
  await postgresSql(url, `ALTER ${relation} SET TABLESPACE ${tablespace}`)
  return directory
}

const keyed = (server: TestServer, key: string, name = 'Rex') =>
  call(server, 'POST', '/v1/pets', { body: { name, categoryId: 1 }, headers: { 'idempotency-key': key } })

const NOW = Date.now()
/** A create through the store itself, keyed when `key` is given. */
const request = (key?: string): CreatePetRequest => ({
  pet: { name: 'Rex', categoryId: 1n },
  ...(key === undefined
    ? {}
    : {
        idempotency: {
          apiKeyId: 1n,
          idempotencyKey: key,
          fingerprint: 'rex',
          requestedAtMs: NOW,
          expiresAtMs: NOW + 86_400_000,
        },
      }),
})

/** Creates (`key` numbered, when given) until one is refused; fails the test if none is. */
async function createUntilRefused(store: Store, key?: string): Promise<void> {
  for (let i = 0; i < MAX_CREATES_UNTIL_FULL; i++) {
    const refused = await store.createPet(request(key && `${key}-${i}`)).then(
      () => false,
      () => true,
    )
    if (refused) return
  }
  assert.fail(`no create was refused in ${MAX_CREATES_UNTIL_FULL} on a full disk`)
}

/**
 * A store whose `relation` is on a small volume, with the pet keyed `order-1` made, then creates (keyed
 * `fillerKey`-n, if given) until the volume refuses one.
 */
async function storeFilledUp(t: TestContext, relation: string, fillerKey?: string) {
  const { store, databaseUrl } = await postgresEngine.open(t)
  const directory = await onSmallVolume(t, databaseUrl, relation)
  const first = await store.createPet(request('order-1'))
  fillFileSystem(directory)
  await createUntilRefused(store, fillerKey)
  return { store, first }
}

function skipWhenRemote(t: TestContext): boolean {
  if (process.env.PETSTORE_TEST_POSTGRES_URL === undefined) return false
  t.skip('the server named by PETSTORE_TEST_POSTGRES_URL is not on this machine: no tablespace here')
  return true
}

describe('a PostgreSQL database whose disk is full', {
  ...engineSuiteOptions(postgresEngine),
  ...mountingSuiteOptions(),
}, () => {
  test('when the disk holding the pets is full, then creates get 503, a create retried with its Idempotency-Key gets its pet again, and reads go on', async (t) => {
    if (skipWhenRemote(t)) return
    const server = await startTestServer(t, { engine: postgresEngine })
    const directory = await onSmallVolume(t, server.databaseUrl as string, 'TABLE pets')
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

  test('when a keyed create waits behind creates refused for a full disk, then it is still tried, and replayed', async (t) => {
    if (skipWhenRemote(t)) return
    const { store, first } = await storeFilledUp(t, 'TABLE pets')
    for (let round = 0; round < 3; round++) {
      // Settled at once: it may be refused before the retry is sent.
      const unkeyed = Promise.allSettled([store.createPet(request())])
      // Past the batch's gathering: the retry waits behind the refused batch, not in it.
      for (let turn = 0; turn < 4; turn++) await new Promise((resolve) => setImmediate(resolve))
      const [replayed] = await Promise.allSettled([store.createPet(request('order-1'))])
      assert.equal((await unkeyed)[0].status, 'rejected')
      assert.deepEqual(replayed.status === 'fulfilled' && replayed.value, { pet: first.pet, replayed: true })
    }
  })

  test('when the Idempotency-Key index is on the full disk, then a retry beside a new keyed create is replayed (the batch tried twice)', async (t) => {
    if (skipWhenRemote(t)) return
    const { store, first } = await storeFilledUp(t, 'INDEX idempotency_keys_pkey', 'filler')
    // The first try fails on the retry's key (23505), the second on the full index (53100).
    const [replayed, refused] = await Promise.allSettled([
      store.createPet(request('order-1')),
      store.createPet(request('new-1')),
    ])
    assert.deepEqual(replayed.status === 'fulfilled' && replayed.value, { pet: first.pet, replayed: true })
    assert.equal(refused.status, 'rejected')
  })
})
