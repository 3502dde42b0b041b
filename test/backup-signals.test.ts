import assert from 'node:assert/strict'
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { describe, type TestContext, test } from 'node:test'
import { waitUntil, within } from './helpers/bounded-wait.ts'
import { runCli } from './helpers/cli-process.ts'
import { petCountOf } from './helpers/sqlite-backup-fixtures.ts'
import { runWithFirstCallHeld, straceSuiteOptions } from './helpers/strace.ts'
import { temporaryDirectory } from './helpers/test-server.ts'

// The process ends only once strace lets its held thread go on: the hold is the test's shortest wait.
const HELD_SECONDS = 3

/** `petstore backup ARGS` in `cwd`, stopped by `signal` while its copy's first sync waits (held by strace). */
async function backupStoppedBy(
  t: TestContext,
  signal: NodeJS.Signals,
  args: string[],
  cwd: string,
  { mainThread = false } = {},
) {
  const backup = runWithFirstCallHeld('fsync', ['backup', ...args], {}, cwd, HELD_SECONDS)
  t.after(() => {
    if (backup.atHeldCall()) backup.kill()
  })
  // The main thread's first sync is the copy's own (its journal mode changed), after which its check and
  // sync run without a turn of the event loop: a signal then waits for the first turn after them.
  const held = mainThread ? backup.mainThreadAtHeldCall : backup.atHeldCall
  await waitUntil(held, 'the backup never reached its first sync', { timeoutMs: 30_000 })
  backup.signal(signal)
  return within(backup.ended, 30_000, `the backup did not end on ${signal}`)
}

describe(
  'a backup stopped by a signal (SQLite, its copy held at its first sync by strace)',
  straceSuiteOptions(),
  () => {
    test('when a backup to a new file is stopped by SIGTERM part way, then it says so in one line, exits 143 and leaves no file, its hidden copy included', async (t) => {
      const cwd = temporaryDirectory(t)
      assert.equal((await runCli(['seed', '--count', '3'], {}, cwd)).status, 0)

      const ended = await backupStoppedBy(t, 'SIGTERM', ['--to', 'b.db'], cwd)

      assert.deepEqual(
        [ended.status, ended.output],
        [143, 'petstore backup: stopped by SIGTERM before the end; b.db is as it was (not written)\n'],
      )
      assert.deepEqual(readdirSync(cwd).sort(), ['data'])
    })

    test('when a backup replacing an older one (--force) is stopped by SIGINT part way, then the older backup is kept whole, exit 130', async (t) => {
      const cwd = temporaryDirectory(t)
      assert.equal((await runCli(['seed', '--count', '3'], {}, cwd)).status, 0)
      assert.equal((await runCli(['backup', '--to', 'b.db'], {}, cwd)).status, 0)
      assert.equal((await runCli(['seed', '--count', '5'], {}, cwd)).status, 0)

      const ended = await backupStoppedBy(t, 'SIGINT', ['--to', 'b.db', '--force'], cwd)

      assert.deepEqual(
        [ended.status, ended.output],
        [130, 'petstore backup: stopped by SIGINT before the end; b.db is as it was (not written)\n'],
      )
      assert.deepEqual(readdirSync(cwd).sort(), ['b.db', 'data'])
      assert.equal(petCountOf(join(cwd, 'b.db')), 3)
    })

    test('when a backup replacing an older one (--force) is stopped by SIGINT in its last steps, which run without a turn of the event loop (the copy checked, synced), then the older backup is kept whole, exit 130', async (t) => {
      const cwd = temporaryDirectory(t)
      assert.equal((await runCli(['seed', '--count', '3'], {}, cwd)).status, 0)
      assert.equal((await runCli(['backup', '--to', 'b.db'], {}, cwd)).status, 0)
      assert.equal((await runCli(['seed', '--count', '5'], {}, cwd)).status, 0)

      const ended = await backupStoppedBy(t, 'SIGINT', ['--to', 'b.db', '--force'], cwd, { mainThread: true })

      assert.deepEqual(
        [ended.status, ended.output],
        [130, 'petstore backup: stopped by SIGINT before the end; b.db is as it was (not written)\n'],
      )
      assert.deepEqual(readdirSync(cwd).sort(), ['b.db', 'data'])
      assert.equal(petCountOf(join(cwd, 'b.db')), 3)
    })
  },
)
