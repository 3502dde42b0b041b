import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { generateApiKey } from '../src/auth/api-key.ts'
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
  },
)
