import assert from 'node:assert/strict'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { generateApiKey } from '../src/auth/api-key.ts'
import { EXIT_RESERVE_MS, SHUTDOWN_MARGIN_MS } from '../src/server.ts'
import { temporaryDirectory } from './helpers/cleanup.ts'
import { exitWithin, logLines, requesterFor, serveForTest } from './helpers/cli-process.ts'

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
})
