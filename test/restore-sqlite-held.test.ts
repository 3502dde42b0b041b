import assert from 'node:assert/strict'
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, type TestContext, test } from 'node:test'
import { waitUntil, within } from './helpers/bounded-wait.ts'
import { requesterFor, runCli, startServeProcess, stop } from './helpers/cli-process.ts'
import { integrityOf, petCountOf } from './helpers/sqlite-backup-fixtures.ts'
import { type HeldAtCall, runWithFirstCallHeld, straceSuiteOptions } from './helpers/strace.ts'
import { temporaryDirectory } from './helpers/test-server.ts'

// Long enough for a server to start on a busy machine while the restore waits at its rename; each test
// takes it and two starts more, past the suites' 30 s default on a loaded machine.
const HELD_SECONDS = 10

/** Starts a server in `cwd`: what it says if it stops before listening, or that it listened (then stopped). */
async function serveAttempt(cwd: string): Promise<string> {
  return startServeProcess({}, cwd).then(
    async (server) => {
      await stop(server)
      return `listened at ${server.origin}`
    },
    (error: Error) => error.message,
  )
}

/** A directory with a backup of 3 pets, `b.db`, and an empty data directory: a first restore's. */
async function backupWithNoDatabase(t: TestContext): Promise<string> {
  const source = temporaryDirectory(t)
  assert.equal((await runCli(['seed', '--count', '3'], {}, source)).status, 0)
  const cwd = temporaryDirectory(t)
  assert.equal((await runCli(['backup', '--to', join(cwd, 'b.db')], {}, source)).status, 0)
  mkdirSync(join(cwd, 'data'), { mode: 0o700 })
  return cwd
}

/** `restore --from b.db` in `cwd`, once it waits at its first `call`, held there by strace. */
async function restoreHeldAt(t: TestContext, call: 'rename' | 'link', cwd: string): Promise<HeldAtCall> {
  const restore = runWithFirstCallHeld(call, ['restore', '--from', 'b.db'], {}, cwd, HELD_SECONDS)
  t.after(async () => {
    if (restore.atHeldCall()) restore.kill()
    await within(restore.ended, 60_000, 'the traced restore did not end')
  })
  const endedFirst = restore.ended.then(({ output }) => {
    throw new Error(`the restore ended before its ${call}:\n${output}`)
  })
  await Promise.race([
    waitUntil(restore.atHeldCall, `the restore never reached its ${call}`, { timeoutMs: 30_000 }),
    endedFirst,
  ])
  endedFirst.catch(() => {})
  return restore
}

/** Runs `restore --from b.db` in `cwd`, starts a server while it waits at its rename, and lets it end. */
async function serveDuringRestore(t: TestContext, cwd: string): Promise<string> {
  const restore = await restoreHeldAt(t, 'rename', cwd)
  const attempt = await serveAttempt(cwd)
  assert.ok(restore.atHeldCall(), 'the server was tried while the restore waited at its rename')
  const ended = await within(restore.ended, 30_000, 'the restore did not end')
  assert.equal(ended.status, 0, ended.output)
  assert.match(ended.output, /^restored 3 pets from \/\S+\/b\.db into \//m)
  return attempt
}

/** After the restore: a key made and a server started list the backup's pets, and nothing else is left. */
async function servesTheBackup(cwd: string): Promise<void> {
  const key = await runCli(['keys', 'create', '--name', 'after'], {}, cwd)
  assert.equal(key.status, 0, key.stderr)
  const server = await startServeProcess({}, cwd)
  try {
    const listed = await requesterFor(key.stdout.trim())(server, '/v1/pets?limit=100')
    assert.equal(listed.status, 200)
    assert.equal(((await listed.json()) as unknown[]).length, 3)
  } finally {
    await stop(server)
  }
}

const HELD = /serve exited before listening:[\s\S]*holds it exclusively, as a restore does until it ends/

describe(
  'a restore holds the database to its end (SQLite, its rename held by strace)',
  straceSuiteOptions(),
  () => {
    test('when a server starts while a restore puts the backup in place of the database, then it is refused as held, and started after the restore it serves the backup; the database replaced is kept whole', {
      timeout: 90_000,
    }, async (t) => {
      const cwd = temporaryDirectory(t)
      assert.equal((await runCli(['seed', '--count', '3'], {}, cwd)).status, 0)
      assert.equal((await runCli(['backup', '--to', 'b.db'], {}, cwd)).status, 0)
      assert.equal((await runCli(['seed', '--count', '5'], {}, cwd)).status, 0)

      assert.match(await serveDuringRestore(t, cwd), HELD)

      const data = join(cwd, 'data')
      const kept = readdirSync(data).filter((name) => name.startsWith('petstore.db.replaced-'))
      assert.equal(kept.length, 1, readdirSync(data).join(', '))
      const aside = join(data, kept[0] as string)
      assert.equal(petCountOf(aside), 8, 'the replaced database, whole')
      assert.equal(integrityOf(aside), 'ok')
      assert.equal(petCountOf(join(data, 'petstore.db')), 3)
      await servesTheBackup(cwd)
    })

    test('when a server starts while a first restore puts the backup where there was no database, then it is refused as held, not left serving a database of its own the restore then replaces', {
      timeout: 90_000,
    }, async (t) => {
      const cwd = await backupWithNoDatabase(t)

      assert.match(await serveDuringRestore(t, cwd), HELD)

      assert.deepEqual(readdirSync(join(cwd, 'data')), ['petstore.db'])
      await servesTheBackup(cwd)
    })

    test('when a first restore is killed before its rename, then a start and the commands (backup and copy --from too) refuse the empty place it held, saying to run the restore again, which restores the backup', {
      timeout: 90_000,
    }, async (t) => {
      const cwd = await backupWithNoDatabase(t)
      const restore = await restoreHeldAt(t, 'rename', cwd)
      restore.kill()
      await within(restore.ended, 30_000, 'the killed restore did not end')
      const unfinished =
        /petstore\.db is the place a restore held that did not finish: run the restore again \(petstore restore --from …\); or, to begin an empty database there, remove it/
      assert.match(await serveAttempt(cwd), unfinished)
      for (const args of [
        ['keys', 'list'],
        ['seed', '--count', '1'],
      ]) {
        const refused = await runCli(args, {}, cwd)
        assert.equal(refused.status, 1, args.join(' '))
        assert.match(refused.stderr, unfinished, args.join(' '))
      }
      // Read as they are, not opened as a start opens them: refused at once, not blamed on the copy made.
      const said = (path: string) =>
        `${path} is the place a restore held that did not finish: run the restore again (petstore restore ` +
        '--from …); or, to begin an empty database there, remove it\n'
      const backup = await runCli(['backup', '--to', 'x.db'], {}, cwd)
      assert.deepEqual([backup.status, backup.stderr], [1, `petstore backup: ${said('data/petstore.db')}`])
      const copy = await runCli(['copy', '--from', 'sqlite:data/petstore.db', '--to', 'sqlite:c.db'], {}, cwd)
      const database = join(cwd, 'data', 'petstore.db')
      assert.deepEqual([copy.status, copy.stderr], [1, `petstore copy: ${said(database)}`])
      assert.deepEqual(readdirSync(cwd).sort(), ['b.db', 'data'], 'no backup, no copy made')
      const again = await runCli(['restore', '--from', 'b.db'], {}, cwd)
      assert.equal(again.status, 0, again.stderr)
      await servesTheBackup(cwd)
    })

    test('when a server makes the database while a first restore is about to take its place, then the restore refuses, saying so, and the server keeps its database', {
      timeout: 90_000,
    }, async (t) => {
      const cwd = await backupWithNoDatabase(t)
      // Held where the restore links its locked empty file at the database's name.
      const restore = await restoreHeldAt(t, 'link', cwd)
      const server = await startServeProcess({}, cwd)
      try {
        const ended = await within(restore.ended, 30_000, 'the restore did not end')
        assert.equal(ended.status, 1, ended.output)
        assert.match(
          ended.output,
          /petstore restore: .*petstore\.db was made while the restore began \(a server starting\?\): stop it, then restore/,
        )
        assert.equal((await fetch(`${server.origin}/readyz`)).status, 200, 'the server serves on')
      } finally {
        await stop(server)
      }
      assert.equal(petCountOf(join(cwd, 'data', 'petstore.db')), 0, "the server's own database, whole")
      assert.equal(integrityOf(join(cwd, 'data', 'petstore.db')), 'ok')
    })
  },
)

describe('a first restore that fails (SQLite)', () => {
  test('when a first restore is given a file that is not a Pet Store database, then it is refused and nothing is left in the data directory, the place it held included', async (t) => {
    const cwd = temporaryDirectory(t)
    mkdirSync(join(cwd, 'data'), { mode: 0o700 })
    writeFileSync(join(cwd, 'b.db'), 'not a database')
    const restore = await runCli(['restore', '--from', 'b.db'], {}, cwd)
    assert.equal(restore.status, 1)
    assert.match(restore.stderr, /^petstore restore: b\.db is not a SQLite database/)
    assert.deepEqual(readdirSync(join(cwd, 'data')), [])
    assert.deepEqual(
      readdirSync(cwd).filter((name) => name !== 'b.db' && name !== 'data'),
      [],
    )
  })
  test('when an empty file is where the database would be (the place a killed first restore held), then a restore puts the backup there and keeps nothing of it aside', async (t) => {
    const cwd = await backupWithNoDatabase(t)
    writeFileSync(join(cwd, 'data', 'petstore.db'), '', { mode: 0o600 })
    const restore = await runCli(['restore', '--from', 'b.db'], {}, cwd)
    assert.equal(restore.status, 0, restore.stderr)
    assert.match(restore.stdout, /^restored 3 pets from \/\S+\/b\.db into \/[^;]+\n$/)
    assert.deepEqual(readdirSync(join(cwd, 'data')), ['petstore.db'])
    assert.equal(petCountOf(join(cwd, 'data', 'petstore.db')), 3)
  })
})
