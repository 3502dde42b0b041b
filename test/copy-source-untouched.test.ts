import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { copyFileSync, mkdirSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { describe, test } from 'node:test'
import { runCli } from './helpers/cli-process.ts'
import { rowCount } from './helpers/sqlite-file.ts'
import { mountingSuiteOptions, mountTmpfs } from './helpers/storage-faults.ts'
import { temporaryDirectory } from './helpers/test-server.ts'

// A copy only reads its SQLite source: a backup kept as evidence, or on a read-only mount, stays as it was.
const digestOf = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex')

describe('petstore copy reads its SQLite source and never writes it', () => {
  test('when copy reads a backup file, then the file is left byte for byte as it was, in its rollback-journal mode, with nothing made beside it', async (t) => {
    const cwd = temporaryDirectory(t)
    assert.equal((await runCli(['seed', '--count', '40'], {}, cwd)).status, 0)
    assert.equal((await runCli(['keys', 'create', '--name', 'ops'], {}, cwd)).status, 0)
    mkdirSync(join(cwd, 'saved'))
    assert.equal((await runCli(['backup', '--to', 'saved/b.db'], {}, cwd)).status, 0)
    const before = digestOf(join(cwd, 'saved', 'b.db'))
    const copy = await runCli(['copy', '--from', 'sqlite:saved/b.db', '--to', 'sqlite:target.db'], {}, cwd)
    assert.equal(copy.status, 0, copy.stderr)
    assert.equal(rowCount(join(cwd, 'target.db'), 'pets'), 40)
    assert.equal(digestOf(join(cwd, 'saved', 'b.db')), before)
    assert.deepEqual(readdirSync(join(cwd, 'saved')), ['b.db'])
  })

  test('when the source holds no cursor secret (no server nor command of this release has opened it), then the copy leaves it without one, and a re-run of a stopped copy is refused naming --into-non-empty, which finishes it', async (t) => {
    const cwd = temporaryDirectory(t)
    const source = { DATABASE_URL: 'sqlite:source.db' }
    assert.equal((await runCli(['seed', '--count', '50'], source, cwd)).status, 0)
    assert.equal((await runCli(['keys', 'create', '--name', 'ops'], source, cwd)).status, 0)
    const made = new DatabaseSync(join(cwd, 'source.db'))
    made.exec("DELETE FROM service_settings WHERE name = 'service_secret'")
    made.close()
    const before = digestOf(join(cwd, 'source.db'))
    const args = ['copy', '--from', 'sqlite:source.db', '--to', 'sqlite:target.db', '--chunk-size', '10']
    const stopped = await runCli([...args, '--max-chunks', '2'], {}, cwd)
    assert.equal(stopped.status, 3, stopped.stderr)
    const refused = await runCli(args, {}, cwd)
    assert.deepEqual(
      [refused.status, refused.stderr],
      [
        1,
        'petstore copy: the target already holds 20 pets and 1 API key; the source holds no cursor secret ' +
          '(no server has opened it), so an earlier copy of it cannot be recognised: give --into-non-empty ' +
          'to copy what is missing (a row that differs stops it)\n',
      ],
    )
    const rerun = await runCli([...args, '--into-non-empty'], {}, cwd)
    assert.equal(rerun.status, 0, rerun.stderr)
    assert.deepEqual(
      [rowCount(join(cwd, 'target.db'), 'pets'), rowCount(join(cwd, 'target.db'), 'api_keys')],
      [50, 1],
    )
    assert.equal(digestOf(join(cwd, 'source.db')), before, 'no secret, nor anything else, written')
  })
})

describe('petstore copy from a read-only file system', mountingSuiteOptions(), () => {
  test('when the backup copied from sits on a read-only file system, then the copy reads it whole', async (t) => {
    const cwd = temporaryDirectory(t)
    assert.equal((await runCli(['seed', '--count', '30'], {}, cwd)).status, 0)
    assert.equal((await runCli(['backup', '--to', 'b.db'], {}, cwd)).status, 0)
    const volume = mountTmpfs(t, 4 * 1024 * 1024)
    copyFileSync(join(cwd, 'b.db'), join(volume, 'b.db'))
    execFileSync('mount', ['-o', 'remount,ro', volume])
    const copy = await runCli(
      ['copy', '--from', `sqlite:${join(volume, 'b.db')}`, '--to', 'sqlite:target.db'],
      {},
      cwd,
    )
    assert.equal(copy.status, 0, copy.stderr)
    assert.equal(rowCount(join(cwd, 'target.db'), 'pets'), 30)
  })

  test('when the file on a read-only file system is a database in WAL mode (not a backup), then copy says it cannot be read there and how to go on, in one line', async (t) => {
    const cwd = temporaryDirectory(t)
    assert.equal((await runCli(['seed', '--count', '3'], {}, cwd)).status, 0)
    const volume = mountTmpfs(t, 4 * 1024 * 1024)
    copyFileSync(join(cwd, 'data', 'petstore.db'), join(volume, 'live.db'))
    execFileSync('mount', ['-o', 'remount,ro', volume])
    const copy = await runCli(
      ['copy', '--from', `sqlite:${join(volume, 'live.db')}`, '--to', 'sqlite:t.db'],
      {},
      cwd,
    )
    assert.deepEqual(
      [copy.status, copy.stderr],
      [
        1,
        `petstore copy: cannot read the database ${join(volume, 'live.db')}: unable to open database file ` +
          `(it is in WAL mode, which needs to write its -shm file beside it, and ${volume} is on a read-only ` +
          'file system: copy from a backup, which is not in WAL mode, or from the file put on a writable disk)\n',
      ],
    )
    assert.deepEqual(readdirSync(cwd).sort(), ['data'], 'no target file left')
  })
})

describe('petstore copy onto a full disk', mountingSuiteOptions(), () => {
  test('when the disk of the SQLite target fills during the copy, then copy says so and what to do (free space, run it again), and a second run ends the copy', async (t) => {
    const cwd = temporaryDirectory(t)
    assert.equal((await runCli(['seed', '--count', '20000'], { DATABASE_URL: 'sqlite:s.db' }, cwd)).status, 0)
    const volume = mountTmpfs(t, 600 * 1024)
    const copy = ['copy', '--from', 'sqlite:s.db', '--to', `sqlite:${join(volume, 't.db')}`]
    const full = await runCli(copy, {}, cwd)
    assert.equal(full.status, 1, full.stderr)
    assert.match(
      full.stderr,
      /^petstore copy: --to \(the target\): the disk holding the database is full: .+; the target holds whole chunks: free space on its volume, then run it again\n$/,
    )
    execFileSync('mount', ['-o', 'remount,size=8m', volume])
    const again = await runCli(copy, {}, cwd)
    assert.equal(again.status, 0, again.stderr)
    assert.equal(rowCount(join(volume, 't.db'), 'pets'), 20000)
  })
})
