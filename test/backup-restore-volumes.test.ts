import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { readdirSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { runCli } from './helpers/cli-process.ts'
import { commitIntoLogThenDie, integrityOf, petCountOf } from './helpers/sqlite-backup-fixtures.ts'
import { fillFileSystem, mountingSuiteOptions, mountTmpfs } from './helpers/storage-faults.ts'
import { temporaryDirectory } from './helpers/test-server.ts'

describe('backup and restore on a volume that cannot take them', mountingSuiteOptions(), () => {
  test('when the backup volume is full, or read-only, then backup says which directory and why in one line, exit 1, and leaves nothing there', async (t) => {
    const cwd = temporaryDirectory(t)
    assert.equal((await runCli(['seed', '--count', '20000'], {}, cwd)).status, 0)
    const volume = mountTmpfs(t, 1024 * 1024)
    const filler = fillFileSystem(volume)
    const full = await runCli(['backup', '--to', join(volume, 'petstore.db')], {}, cwd)
    assert.deepEqual(
      [full.status, full.stderr],
      [1, `petstore backup: ${volume} has no space left for the backup\n`],
    )
    assert.deepEqual(readdirSync(volume), ['filler'], 'nothing left behind')
    rmSync(filler)
    execFileSync('mount', ['-o', 'remount,ro', volume])
    const readOnly = await runCli(['backup', '--to', join(volume, 'petstore.db')], {}, cwd)
    assert.deepEqual(
      [readOnly.status, readOnly.stderr],
      [1, `petstore backup: ${volume} is on a read-only file system\n`],
    )
  })

  test("when the database's own volume is full, or read-only, then backup says which directory and why in one line, exit 1", async (t) => {
    const cwd = temporaryDirectory(t)
    const volume = mountTmpfs(t, 8 * 1024 * 1024)
    const env = { DATABASE_URL: `sqlite:${join(volume, 'petstore.db')}` }
    assert.equal((await runCli(['seed', '--count', '5'], env, cwd)).status, 0)
    // The service stopped: reading a WAL database makes its -shm beside it first.
    const filler = fillFileSystem(volume)
    const full = await runCli(['backup', '--to', join(cwd, 'b.db')], env, cwd)
    assert.equal(full.status, 1, full.stderr)
    assert.match(
      full.stderr,
      new RegExp(`^petstore backup: cannot read the database .*\\(the disk holding ${volume} is full\\)\n$`),
    )
    rmSync(filler)
    for (const leftover of readdirSync(volume).filter((name) => name.endsWith('-shm')))
      rmSync(join(volume, leftover))
    execFileSync('mount', ['-o', 'remount,ro', volume])
    const readOnly = await runCli(['backup', '--to', join(cwd, 'b.db')], env, cwd)
    assert.equal(readOnly.status, 1, readOnly.stderr)
    assert.match(
      readOnly.stderr,
      new RegExp(
        `^petstore backup: cannot read the database .*${volume} is on a read-only file system: back up the file put on a writable disk\\)\n$`,
      ),
    )
  })

  test("when the database's volume is full, then restore names it in one line, exit 1, and the database is as it was", async (t) => {
    const cwd = temporaryDirectory(t)
    assert.equal((await runCli(['seed', '--count', '20000'], {}, cwd)).status, 0)
    assert.equal((await runCli(['backup', '--to', 'saved.db'], {}, cwd)).status, 0)
    const volume = mountTmpfs(t, 8 * 1024 * 1024)
    const env = { DATABASE_URL: `sqlite:${join(volume, 'petstore.db')}` }
    assert.equal((await runCli(['seed', '--count', '5'], env, cwd)).status, 0)
    const filler = fillFileSystem(volume)
    const restore = await runCli(['restore', '--from', 'saved.db'], env, cwd)
    assert.deepEqual(
      [restore.status, restore.stderr],
      [1, `petstore restore: ${volume} has no space left for the restored database\n`],
    )
    assert.deepEqual(readdirSync(volume).sort(), ['filler', 'petstore.db'], 'nothing left behind')
    // Opened, a WAL database needs room for its -shm.
    rmSync(filler)
    assert.equal(integrityOf(join(volume, 'petstore.db')), 'ok')
    assert.equal(petCountOf(join(volume, 'petstore.db')), 5, 'its own 5 pets, not 20,000')
  })

  test('when the volume is nearly full but the restore fails for another reason (the file is not a database), then that reason is said, not the volume', async (t) => {
    const cwd = temporaryDirectory(t)
    const volume = mountTmpfs(t, 8 * 1024 * 1024)
    const env = { DATABASE_URL: `sqlite:${join(volume, 'petstore.db')}` }
    assert.equal((await runCli(['seed', '--count', '5'], env, cwd)).status, 0)
    writeFileSync(join(cwd, 'notes.txt'), 'x'.repeat(300 * 1024))
    const filler = fillFileSystem(volume)
    // Room for the copy, and under 1 MiB left once it is made.
    truncateSync(filler, statSync(filler).size - 900 * 1024)
    const restore = await runCli(['restore', '--from', 'notes.txt'], env, cwd)
    assert.deepEqual(
      [restore.status, restore.stderr],
      [1, 'petstore restore: notes.txt is not a SQLite database\n'],
    )
  })

  test('when the database volume is read-only, then restore says so in one line and changes nothing', async (t) => {
    const cwd = temporaryDirectory(t)
    assert.equal((await runCli(['seed', '--count', '20'], {}, cwd)).status, 0)
    assert.equal((await runCli(['backup', '--to', 'saved.db'], {}, cwd)).status, 0)
    const volume = mountTmpfs(t, 8 * 1024 * 1024)
    const env = { DATABASE_URL: `sqlite:${join(volume, 'petstore.db')}` }
    assert.equal((await runCli(['seed', '--count', '5'], env, cwd)).status, 0)
    execFileSync('mount', ['-o', 'remount,ro', volume])
    const restore = await runCli(['restore', '--from', 'saved.db'], env, cwd)
    assert.deepEqual(
      [restore.status, restore.stderr],
      [1, `petstore restore: ${volume} is on a read-only file system\n`],
    )
    assert.deepEqual(readdirSync(volume), ['petstore.db'])
  })

  test('when the database was left with writes in its write-ahead log (a killed server) and its volume is full, then restore refuses before removing anything, and every one of those writes is still there', async (t) => {
    const cwd = temporaryDirectory(t)
    assert.equal((await runCli(['seed', '--count', '20'], {}, cwd)).status, 0)
    assert.equal((await runCli(['backup', '--to', 'saved.db'], {}, cwd)).status, 0)
    const volume = mountTmpfs(t, 16 * 1024 * 1024)
    const database = join(volume, 'petstore.db')
    const env = { DATABASE_URL: `sqlite:${database}` }
    assert.equal((await runCli(['seed', '--count', '5'], env, cwd)).status, 0)
    commitIntoLogThenDie(database, 20_000)
    assert.ok(statSync(`${database}-wal`).size > 0, 'the writes are in the log')
    // Room for the copy of the backup, not for the log's pages folded into the database.
    const filler = fillFileSystem(volume)
    truncateSync(filler, statSync(filler).size - 4 * statSync(join(cwd, 'saved.db')).size)
    const restore = await runCli(['restore', '--from', 'saved.db'], env, cwd)
    assert.deepEqual(
      [restore.status, restore.stderr],
      [1, `petstore restore: ${volume} has no space left for the restored database\n`],
    )
    rmSync(filler)
    assert.equal(integrityOf(database), 'ok')
    assert.equal(petCountOf(database), 20_005, 'the logged writes are kept')
  })
})
