import assert from 'node:assert/strict'
import { unlinkSync } from 'node:fs'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { StoreUnavailableError, WriteInDoubtError } from '../src/errors.ts'
import { SqliteConnection } from '../src/store/sqlite/sqlite-connection.ts'
import { LIST_PETS_SQL } from '../src/store/sqlite/sqlite-pet-queries.ts'
import { SqliteStore, type SqliteStoreOptions } from '../src/store/sqlite/sqlite-store.ts'
import { waitUntil, within } from './helpers/bounded-wait.ts'
import type { Cleanup } from './helpers/cleanup.ts'
import { temporaryDirectory } from './helpers/cleanup.ts'

async function openStore(
  t: Cleanup,
  path: string,
  busyTimeoutMs = 2000,
  options: Partial<SqliteStoreOptions> = {},
) {
  const store = new SqliteStore({ path, busyTimeoutMs, ...options })
  t.after(() => store.close())
  await store.migrate()
  return store
}

/** Another connection to the file, as the CLI or a second worker process would have. */
function otherConnection(t: Cleanup, path: string) {
  const database = new DatabaseSync(path)
  t.after(() => database.close())
  return database
}

describe('SQLite engine', () => {
  test('when the -shm was replaced under the store (another process opened the database after its deletion), then the idempotency purge is refused too, not written by a stale index', async (t) => {
    const path = join(temporaryDirectory(t), 'pets.db')
    const store = await openStore(t, path)
    assert.equal(await store.purgeIdempotencyRecords(Date.now()), 0)
    unlinkSync(`${path}-shm`)
    otherConnection(t, path).prepare('SELECT count(*) FROM pets').get()
    await assert.rejects(store.purgeIdempotencyRecords(Date.now()), { name: 'StorageFaultError' })
  })

  test('when the database file is opened, then it is in WAL mode', async (t) => {
    const path = join(temporaryDirectory(t), 'pets.db')
    await openStore(t, path)
    const row = otherConnection(t, path).prepare('PRAGMA journal_mode').get() as { journal_mode: string }
    assert.equal(row.journal_mode, 'wal')
  })

  test('when a connection is opened, then every commit is synced (synchronous = FULL) in WAL mode', (t) => {
    const connection = new SqliteConnection({
      path: join(temporaryDirectory(t), 'pets.db'),
      busyTimeoutMs: 0,
    })
    t.after(() => connection.close())
    assert.equal(connection.pragma('synchronous'), 2, 'FULL is 2')
    assert.equal(connection.pragma('journal_mode'), 'wal')
    assert.equal(connection.pragma('busy_timeout'), 0, 'busy waits are asynchronous retries instead')
  })

  test('when another process holds the write lock, then the create waits without freezing the event loop', async (t) => {
    const path = join(temporaryDirectory(t), 'pets.db')
    const store = await openStore(t, path)
    const other = otherConnection(t, path)
    other.exec('BEGIN IMMEDIATE')
    const created = store.createPet({ pet: { name: 'patient', categoryId: 1n } })

    // While the lock is held, timers fire and reads are answered. A wait that blocked would hold the loop
    // until the lock's release (never, here) or the 2 s busy timeout; 1 s tells them from a loaded host.
    const started = performance.now()
    await sleep(20)
    assert.ok(performance.now() - started < 1000, 'the event loop is not blocked by the wait')
    assert.deepEqual(await store.listPets({ limit: 10 }), [])
    await sleep(300)
    other.exec('COMMIT')

    const { pet } = await created
    assert.equal(pet.name, 'patient')
    assert.deepEqual(await store.getPet(pet.id), pet)
  })

  test('when the write lock is held longer than busyTimeoutMs, then the create fails with StoreUnavailableError', async (t) => {
    const path = join(temporaryDirectory(t), 'pets.db')
    const store = await openStore(t, path, 200)
    const other = otherConnection(t, path)
    other.exec('BEGIN IMMEDIATE')
    await assert.rejects(store.createPet({ pet: { name: 'late', categoryId: 1n } }), StoreUnavailableError)
  })

  for (const writeThread of [false, true]) {
    test(`when a create queues behind a batch waiting out a held lock${writeThread ? ' (write thread on)' : ''}, then it fails within busyTimeoutMs of its own arrival, not after the batch ahead's wait and a whole one of its own`, async (t) => {
      const path = join(temporaryDirectory(t), 'pets.db')
      const store = await openStore(t, path, 2000, { writeThread })
      // The write thread starts with the first create: started first, its start-up (up to 0.6 s on a busy
      // machine) is not inside the wait measured below.
      await store.createPet({ pet: { name: 'first', categoryId: 1n } })
      const other = otherConnection(t, path)
      other.exec('BEGIN IMMEDIATE')
      const ahead = assert.rejects(
        store.createPet({ pet: { name: 'ahead', categoryId: 1n } }),
        StoreUnavailableError,
      )
      // Soon after: waiting out what is left of the batch ahead's wait, then a whole one, would take ~3,900 ms.
      await sleep(100)
      const arrived = performance.now()
      await assert.rejects(
        store.createPet({ pet: { name: 'queued', categoryId: 1n } }),
        StoreUnavailableError,
      )
      const waited = performance.now() - arrived
      await ahead
      // Its own bound, 2,000 ms, where it waited ~3,900 before: a second either side for a loaded machine.
      assert.ok(waited >= 1900 && waited < 3000, `waited ${Math.round(waited)} ms`)
    })
  }

  test('when batches are being synced on the write thread, then the event loop keeps serving between them', async (t) => {
    const path = join(temporaryDirectory(t), 'pets.db')
    const store = await openStore(t, path, 2000, { writeThread: true })
    // Several batches of creates: on the calling thread they would all commit within one turn of the event
    // loop, so no timer could see some done and some not; committed elsewhere, timers keep firing meanwhile.
    let committed = 0
    const creates = Array.from({ length: 3000 }, (_, i) =>
      store.createPet({ pet: { name: `p${i}`, categoryId: 1n } }).then(() => committed++),
    )
    let ticksDuringCommits = 0
    await waitUntil(
      () => {
        if (committed > 0 && committed < creates.length) ticksDuringCommits++
        return committed === creates.length
      },
      'the creates were not all committed',
      { everyMs: 0 },
    )
    await Promise.all(creates)
    assert.ok(ticksDuringCommits > 0, 'timers fired while batches were still being committed')
  })

  test('when the store is closed while creates are still gathering (write thread on), then they commit and no thread is left running', async (t) => {
    const path = join(temporaryDirectory(t), 'pets.db')
    const store = await openStore(t, path, 2000, { writeThread: true })
    // A live worker thread shows as a MessagePort among the process's active resources.
    const ports = () => process.getActiveResourcesInfo().filter((kind) => kind === 'MessagePort').length
    const portsBefore = ports()
    const creates = Array.from({ length: 20 }, (_, i) =>
      store.createPet({ pet: { name: `p${i}`, categoryId: 1n } }),
    )
    await within(store.close(), 10_000, 'close did not return')
    const created = await within(Promise.all(creates), 5000, 'creates issued before close were not answered')
    assert.equal(new Set(created.map(({ pet }) => pet.id)).size, 20)
    assert.equal(ports(), portsBefore, 'a write thread was left running after close (close did not wait)')
  })

  test('when the write thread dies in the middle of a batch, then that batch fails as in doubt (503) and the next create works', async (t) => {
    const path = join(temporaryDirectory(t), 'pets.db')
    const writeThreadEntry = new URL('./helpers/crashing-write-thread.ts', import.meta.url)
    const store = await openStore(t, path, 2000, { writeThread: true, writeThreadEntry })
    const before = await store.createPet({ pet: { name: 'before', categoryId: 1n } })
    // Before its commit or after it: the caller cannot tell, and is told the create may have been made.
    for (const name of ['crash', 'crash after commit'])
      await assert.rejects(
        store.createPet({ pet: { name, categoryId: 1n } }),
        (error: Error) =>
          error instanceof WriteInDoubtError && /exited \(code 7[01]\)/.test(error.cause?.toString() ?? ''),
        name,
      )
    const after = await store.createPet({ pet: { name: 'after', categoryId: 2n } })
    assert.ok(after.pet.id > before.pet.id)
    const names = (await store.listPets({ limit: 10 })).map((pet) => pet.name)
    assert.deepEqual(
      names,
      ['before', 'crash after commit', 'after'],
      'the batch that died after its commit was stored',
    )
  })

  test('when the write thread dies of an uncaught exception with creates queued behind its batch, then only that batch is in doubt: the next goes to a new thread and is made', async (t) => {
    const path = join(temporaryDirectory(t), 'pets.db')
    const writeThreadEntry = new URL('./helpers/crashing-write-thread.ts', import.meta.url)
    const store = await openStore(t, path, 2000, { writeThread: true, writeThreadEntry, maxBatch: 1 })
    await store.createPet({ pet: { name: 'before', categoryId: 1n } })
    // One batch each: "queued" waits behind "throw", and is sent as the dying thread's error is reported.
    const [thrown, queued] = await Promise.allSettled([
      store.createPet({ pet: { name: 'throw', categoryId: 1n } }),
      store.createPet({ pet: { name: 'queued', categoryId: 1n } }),
    ])
    assert.ok(thrown.status === 'rejected' && thrown.reason instanceof WriteInDoubtError, String(thrown))
    assert.equal(queued.status, 'fulfilled', `the queued create: ${(queued as PromiseRejectedResult).reason}`)
    // The thrown batch may have been made (the real handler still ran): in doubt, as its caller was told.
    const names = (await store.listPets({ limit: 10 })).map((pet) => pet.name)
    assert.deepEqual(
      names.filter((name) => name !== 'throw'),
      ['before', 'queued'],
    )
  })

  test('when the write thread cannot open the database, then the create fails as unavailable, not in doubt, and nothing is stored', async (t) => {
    const path = join(temporaryDirectory(t), 'pets.db')
    const writeThreadEntry = new URL('./helpers/unopenable-write-thread.ts', import.meta.url)
    const store = await openStore(t, path, 2000, { writeThread: true, writeThreadEntry })
    for (const name of ['first', 'second'])
      await assert.rejects(
        store.createPet({ pet: { name, categoryId: 1n } }),
        (error: Error) =>
          error instanceof StoreUnavailableError &&
          !(error instanceof WriteInDoubtError) &&
          /cannot open the database .*pets\.db\/pets\.db/.test(`${error.message} ${error.cause}`),
        name,
      )
    assert.deepEqual(await store.listPets({ limit: 10 }), [])
  })

  test('when two stores on one file create concurrently, then every create commits with a distinct id', async (t) => {
    const path = join(temporaryDirectory(t), 'pets.db')
    const [a, b] = [await openStore(t, path), await openStore(t, path)]
    const created = await Promise.all(
      Array.from({ length: 400 }, (_, i) =>
        (i % 2 ? a : b).createPet({ pet: { name: `p${i}`, categoryId: BigInt(i) } }),
      ),
    )
    assert.equal(new Set(created.map(({ pet }) => pet.id)).size, 400)
    assert.equal((await a.listPets({ limit: 100 })).length, 100)
  })

  test('when a batch of 127 creates is stored, then each pet gets its own id in request order and reads back as sent', async (t) => {
    const store = await openStore(t, join(temporaryDirectory(t), 'pets.db'))
    const statuses = [undefined, 'available', 'pending', 'sold'] as const
    const sent = Array.from({ length: 127 }, (_, i) => {
      const status = statuses[i % 4]
      return { name: `p${i}`, categoryId: BigInt(i) * 7n, ...(status && { status }) }
    })
    // Submitted together: one batch, stored in statements of 64, 32, 16, 8, 4, 2 and 1 rows.
    const created = await Promise.all(sent.map((pet) => store.createPet({ pet })))
    for (const [i, { pet }] of created.entries()) {
      assert.deepEqual(pet, { id: pet.id, ...sent[i] })
      if (i > 0) assert.equal(pet.id, (created[i - 1]?.pet.id ?? 0n) + 1n, 'ids follow request order')
      assert.deepEqual(await store.getPet(pet.id), pet, `pet ${pet.id} reads back as sent`)
    }
  })

  test('when ids given out earlier are above every pet left, then a new pet gets an id above them, exactly past 2^53', async (t) => {
    const path = join(temporaryDirectory(t), 'pets.db')
    const store = await openStore(t, path)
    await store.createPet({ pet: { name: 'first', categoryId: 1n } })
    // As after pets with higher ids were given out and are gone: only the sequence remembers them.
    otherConnection(t, path).exec("UPDATE sqlite_sequence SET seq = 9007199254740992 WHERE name = 'pets'")
    const [a, b] = await Promise.all([
      store.createPet({ pet: { name: 'a', categoryId: 1n } }),
      store.createPet({ pet: { name: 'b', categoryId: 1n } }),
    ])
    assert.deepEqual([a.pet.id, b.pet.id], [9007199254740993n, 9007199254740994n])
    const later = await store.createPet({ pet: { name: 'later', categoryId: 1n } })
    assert.equal(later.pet.id, 9007199254740995n, 'the sequence moved past the batch')
  })

  test('when the last int64 id has been given out, then a create fails and nothing more is written', async (t) => {
    const path = join(temporaryDirectory(t), 'pets.db')
    const store = await openStore(t, path)
    await store.createPet({ pet: { name: 'first', categoryId: 1n } })
    otherConnection(t, path).exec(`UPDATE sqlite_sequence SET seq = ${2n ** 63n - 2n} WHERE name = 'pets'`)
    const last = await store.createPet({ pet: { name: 'last', categoryId: 1n } })
    assert.equal(last.pet.id, 2n ** 63n - 1n)
    await assert.rejects(
      store.createPet({ pet: { name: 'beyond', categoryId: 1n } }),
      /every pet id has been given out/,
    )
    // Two creates in one batch, one id left: the batch is refused whole, then each is tried alone, and
    // the first takes the id.
    otherConnection(t, path).exec(`UPDATE sqlite_sequence SET seq = ${2n ** 63n - 2n} WHERE name = 'pets'`)
    otherConnection(t, path).exec(`DELETE FROM pets WHERE name = 'last'`)
    const both = await Promise.allSettled([
      store.createPet({ pet: { name: 'x', categoryId: 1n } }),
      store.createPet({ pet: { name: 'y', categoryId: 1n } }),
    ])
    assert.deepEqual(
      both.map((outcome) => outcome.status),
      ['fulfilled', 'rejected'],
    )
    assert.deepEqual(
      (await store.listPets({ limit: 10 })).map((pet) => pet.name),
      ['first', 'x'],
    )
  })

  test('when a page is read, then its query walks an index from the cursor (no scan, no sort)', async (t) => {
    const path = join(temporaryDirectory(t), 'pets.db')
    const store = await openStore(t, path)
    const statuses = ['available', 'pending', 'sold'] as const
    for (let i = 0; i < 300; i++) {
      await store.createPet({ pet: { name: `P${i}`, categoryId: 1n, status: statuses[i % 3] } })
    }
    const database = otherConnection(t, path)
    const plan = (sql: string) =>
      (database.prepare(`EXPLAIN QUERY PLAN ${sql}`).all() as Array<{ detail: string }>)
        .map((row) => row.detail)
        .join(' | ')
    assert.match(plan(LIST_PETS_SQL.all), /^SEARCH pets USING INTEGER PRIMARY KEY \(rowid>\?\)$/)
    assert.match(
      plan(LIST_PETS_SQL.byStatus),
      /^SEARCH pets USING INDEX pets_status_id \(status=\? AND id>\?\)$/,
    )
  })

  test('when two processes create with one idempotency key at once, then exactly one pet exists', async (t) => {
    const path = join(temporaryDirectory(t), 'pets.db')
    const [a, b] = [await openStore(t, path), await openStore(t, path)] as const
    const now = Date.now()
    const record = {
      apiKeyId: 1n,
      idempotencyKey: 'k-1',
      fingerprint: 'f',
      requestedAtMs: now,
      expiresAtMs: now + 60_000,
    }
    const pet = { name: 'Rex', categoryId: 1n }
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => (i % 2 ? a : b).createPet({ pet, idempotency: record })),
    )
    const ids = new Set(results.map((result) => result.pet.id))
    assert.equal(ids.size, 1, 'every caller got the same pet')
    assert.equal(results.filter((result) => !result.replayed).length, 1)
    assert.equal((await a.listPets({ limit: 100 })).length, 1)
  })
})
