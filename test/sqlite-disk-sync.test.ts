import assert from 'node:assert/strict'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { describe, test } from 'node:test'
import { generateApiKey } from '../src/auth/api-key.ts'
import { get } from './helpers/bearer-call.ts'
import { waitUntil } from './helpers/bounded-wait.ts'
import { startTracedServe, straceSuiteOptions } from './helpers/strace.ts'
import { temporaryDirectory } from './helpers/test-server.ts'

const CREATES = 20

// A SIGKILL leaves the page cache intact, so the crash tests cannot see a commit that skipped its sync;
// counting the sync calls can. Power loss itself is not simulated (docs/reliability.md).
describe(
  'disk sync before every acknowledged create (SQLite, traced with strace)',
  straceSuiteOptions(),
  () => {
    for (const writeThread of ['off', 'on']) {
      test(`when ${CREATES} creates are acknowledged one after another (SQLITE_WRITE_THREAD=${writeThread}), then the WAL was synced at least once for each`, async (t) => {
        const cwd = temporaryDirectory(t)
        const key = generateApiKey()
        const env = { API_KEYS: `sync:${key}`, RATE_LIMIT_PER_MINUTE: '0', SQLITE_WRITE_THREAD: writeThread }
        const server = await startTracedServe(env, cwd)
        t.after(() => server.kill())
        const walSyncs = () => server.syncsOf('petstore.db-wal')
        const before = walSyncs()
        // One at a time, each waiting for its 201: every create is a batch, and a commit, of its own.
        for (let i = 0; i < CREATES; i++) {
          const response = await fetch(`${server.origin}/v1/pets`, {
            method: 'POST',
            headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
            body: `{"name":"synced ${i}","categoryId":${i}}`,
            signal: AbortSignal.timeout(10_000),
          })
          assert.equal(response.status, 201, await response.text())
        }
        // Each sync is logged before the 201 it precedes; the wait only covers the trace file's writing.
        await waitUntil(
          () => walSyncs() - before >= CREATES,
          () =>
            `${CREATES} creates were acknowledged but the WAL was synced ${walSyncs() - before} times ` +
            '(commits acknowledged without their sync: is synchronous below FULL?)',
          { timeoutMs: 3000, everyMs: 50 },
        )
      })
    }

    test('when WRITE_BATCH_MAX is 1 and 50 creates arrive at once, then each is committed, and synced, on its own', async (t) => {
      const cwd = temporaryDirectory(t)
      const key = generateApiKey()
      const env = { API_KEYS: `sync:${key}`, RATE_LIMIT_PER_MINUTE: '0', WRITE_BATCH_MAX: '1' }
      const server = await startTracedServe(env, cwd)
      t.after(() => server.kill())
      const walSyncs = () => server.syncsOf('petstore.db-wal')
      const before = walSyncs()
      // Together, as one batch would take them all by default (500): only the setting parts them.
      const answers = await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          fetch(`${server.origin}/v1/pets`, {
            method: 'POST',
            headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
            body: `{"name":"alone ${i}","categoryId":${i}}`,
            signal: AbortSignal.timeout(10_000),
          }),
        ),
      )
      assert.deepEqual(new Set(answers.map(({ status }) => status)), new Set([201]))
      await waitUntil(
        () => walSyncs() - before >= 50,
        () => `50 creates, one to a batch, but the WAL was synced ${walSyncs() - before} times`,
        { timeoutMs: 3000, everyMs: 50 },
      )
    })

    // Every request waits while the event loop's connection syncs; the counts do not need a create's
    // durability (docs/decisions.md, "Deprecated-call counts are committed without a sync").
    test('when the deprecated getPet is called, then its counts are committed without a disk sync, and a later synced commit carries them', async (t) => {
      const cwd = temporaryDirectory(t)
      const key = generateApiKey()
      const env = { API_KEYS: `legacy:${key}`, RATE_LIMIT_PER_MINUTE: '0' }
      const server = await startTracedServe(env, cwd)
      t.after(() => server.kill())
      const walSyncs = () => server.syncsOf('petstore.db-wal')
      const before = walSyncs()
      for (let i = 0; i < 3; i++) assert.equal((await get(server.origin, '/v1/pets/1', key)).status, 404)
      // Read beside the service, as a backup would: the commit is in the log whether or not it was synced.
      const reader = new DatabaseSync(join(cwd, 'data', 'petstore.db'), { readOnly: true })
      t.after(() => reader.close())
      const recorded = () =>
        Number(
          reader.prepare("SELECT deprecated_calls FROM api_keys WHERE name = 'legacy'").get()
            ?.deprecated_calls,
        )
      await waitUntil(() => recorded() === 3, 'the counts were not written within 8 s', {
        timeoutMs: 8000,
        everyMs: 100,
      })
      assert.equal(walSyncs() - before, 0, "the counts' commit synced the WAL")

      const created = await fetch(`${server.origin}/v1/pets`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: '{"name":"after the counts","categoryId":1}',
        signal: AbortSignal.timeout(10_000),
      })
      assert.equal(created.status, 201, await created.text())
      await waitUntil(
        () => walSyncs() - before >= 1,
        'a create after the counts was acknowledged without a sync of the WAL, which holds the counts too',
        { timeoutMs: 3000, everyMs: 50 },
      )
    })
  },
)
