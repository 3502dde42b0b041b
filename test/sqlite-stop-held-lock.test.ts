import assert from 'node:assert/strict'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { generateApiKey } from '../src/auth/api-key.ts'
import { EXIT_RESERVE_MS, SHUTDOWN_MARGIN_MS } from '../src/server.ts'
import { SqliteWriteThread } from '../src/store/sqlite/sqlite-write-thread.ts'
import { within } from './helpers/bounded-wait.ts'
import { temporaryDirectory } from './helpers/cleanup.ts'
import { exitWithin, logLines, requesterFor, runCli, serveForTest } from './helpers/cli-process.ts'

// What a loaded host may add to the stop's bound (the process's own exit, the test's polling).
const SLACK_MS = 1000

describe('a stop while another process holds the SQLite write lock', () => {
  for (const writeThread of ['off', 'on']) {
    test(`when the service is stopped while another process holds the write lock past the stop's bound, a create waiting for it (write thread ${writeThread}), then it exits 0 within the bound, the create is not acknowledged, and one line reports the deprecated-call counts not recorded`, async (t) => {
      const cwd = temporaryDirectory(t)
      const key = generateApiKey()
      const shutdownMs = 1000
      const server = await serveForTest(
        t,
        {
          API_KEYS: `held:${key}`,
          SHUTDOWN_TIMEOUT_MS: String(shutdownMs),
          // A create would wait for the lock a minute: the stop must not.
          SQLITE_BUSY_TIMEOUT_MS: '60000',
          SQLITE_WRITE_THREAD: writeThread,
        },
        cwd,
      )
      const request = requesterFor(key)
      const created = await request(server, '/v1/pets', {
        method: 'POST',
        body: '{"name":"Rex","categoryId":1}',
      })
      assert.equal(created.status, 201)
      for (let i = 0; i < 3; i++) assert.equal((await request(server, '/v1/pets/1')).status, 200)
      const lock = new DatabaseSync(join(cwd, 'data', 'petstore.db'))
      lock.exec('BEGIN IMMEDIATE')
      t.after(() => {
        lock.exec('ROLLBACK')
        lock.close()
      })

      const waiting = request(server, '/v1/pets', {
        method: 'POST',
        body: '{"name":"Held","categoryId":1}',
      }).then(
        (response) => response.status,
        () => 'cut',
      )
      // Time for the create to reach the store and wait there for the lock.
      await sleep(1000)
      const signalledAt = performance.now()
      server.child.kill('SIGTERM')
      const exit = await exitWithin(server, 30_000)
      const tookMs = performance.now() - signalledAt
      const answered = await waiting
      assert.ok(answered === 'cut' || answered === 503, `the waiting create: ${answered}`)

      const bound = shutdownMs + SHUTDOWN_MARGIN_MS - EXIT_RESERVE_MS
      assert.equal(exit, 0, server.output().slice(-2000))
      assert.ok(
        tookMs <= bound + SLACK_MS,
        `exited ${Math.round(tookMs)} ms after SIGTERM (bound ${bound} ms)`,
      )
      const lines = logLines(server) as Array<{ msg?: string; deprecatedCalls?: Array<{ calls: number }> }>
      const reports = lines.filter((line) => line.msg === 'deprecated-call counts not recorded at shutdown')
      assert.equal(reports.length, 1, server.output().slice(-2000))
      assert.equal(reports[0]?.deprecatedCalls?.[0]?.calls, 3)
      assert.equal(lines.filter((line) => line.msg === 'stopped').length, 1)
    })
  }

  test("when the stop sets its bound before the write thread has started (a create arrives just before the stop), then that create's wait for the lock still ends by the bound", async (t) => {
    const cwd = temporaryDirectory(t)
    assert.equal((await runCli(['seed', '--count', '1'], {}, cwd)).status, 0)
    const path = join(cwd, 'data', 'petstore.db')
    const lock = new DatabaseSync(path)
    lock.exec('BEGIN IMMEDIATE')
    t.after(() => {
      lock.exec('ROLLBACK')
      lock.close()
    })
    const thread = new SqliteWriteThread({ path, busyTimeoutMs: 60_000 })
    t.after(() => thread.close())
    const started = performance.now()
    // The bound comes first, then the batch that starts the thread: its wait must end by the bound, not
    // at its own 60 s (the message ending waits had no thread to go to).
    thread.endWaitsBy(started + 300)
    const batch = thread.commit([{ pet: { name: 'Late', categoryId: 1n } }], 60_000)
    await assert.rejects(
      within(batch, 10_000, 'the batch waited past the bound'),
      (error: Error) => !/waited past the bound/.test(error.message),
    )
    const tookMs = performance.now() - started
    // The thread's own start (its modules) comes first: a second or two on a loaded host.
    assert.ok(tookMs < 5000, `the batch's wait ended ${Math.round(tookMs)} ms after the bound was set`)
  })
})
