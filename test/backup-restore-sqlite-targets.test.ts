import assert from 'node:assert/strict'
import { execFileSync, spawnSync } from 'node:child_process'
import {
  chmodSync,
  lstatSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { createServer } from 'node:net'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { generateApiKey } from '../src/auth/api-key.ts'
import { temporaryBeside } from '../src/store/sqlite/sqlite-durable-files.ts'
import { runCli } from './helpers/cli-process.ts'
import { integrityOf } from './helpers/sqlite-backup-fixtures.ts'
import { temporaryDirectory } from './helpers/test-server.ts'

describe('backup and restore (SQLite)', () => {
  test('when the backup would replace the database itself (or a companion file), or names a directory, then it refuses in one line and the database is untouched', async (t) => {
    const cwd = temporaryDirectory(t)
    const env = { API_KEYS: `cli:${generateApiKey()}` }
    assert.equal((await runCli(['seed', '--count', '5'], env, cwd)).status, 0)
    const database = join(cwd, 'data', 'petstore.db')
    const before = statSync(database).ino
    for (const to of [
      'data/petstore.db',
      './data/../data/petstore.db',
      database,
      'data/petstore.db-wal',
      'data/petstore.db/',
    ]) {
      const refused = await runCli(['backup', '--to', to, '--force'], env, cwd)
      assert.deepEqual(
        [refused.status, refused.stderr],
        [
          1,
          `petstore backup: ${to} is the database being backed up (or one of its files): name another file\n`,
        ],
      )
    }
    for (const to of ['data', 'data/']) {
      const directory = await runCli(['backup', '--to', to, '--force'], env, cwd)
      assert.deepEqual(
        [directory.status, directory.stderr],
        [1, `petstore backup: ${to} is a directory: name the backup file\n`],
      )
    }
    // A relative path is taken from where the command runs (npm run: the repository's root): named whole.
    const missing = await runCli(['backup', '--to', 'backups/pets.db'], env, cwd)
    assert.deepEqual(
      [missing.status, missing.stderr],
      [
        1,
        `petstore backup: ${join(cwd, 'backups')} does not exist: make it (mkdir -m 700 ${join(cwd, 'backups')}), or name a file in another directory\n`,
      ],
    )
    const absent = await runCli(['restore', '--from', 'backups/pets.db'], env, cwd)
    assert.deepEqual(
      [absent.status, absent.stderr],
      [1, `petstore restore: there is no file at ${join(cwd, 'backups', 'pets.db')}\n`],
    )
    assert.deepEqual(readdirSync(cwd).sort(), ['data'], 'no file left beside it')
    assert.deepEqual(
      readdirSync(join(cwd, 'data')).filter((name) => name.endsWith('.tmp')),
      [],
      'no temporary file left',
    )
    assert.equal(statSync(database).ino, before, 'the same file')
    assert.equal(
      (await runCli(['seed', '--count', '1'], env, cwd)).stdout,
      'added 1 pet\n',
      'the database still works',
    )
    assert.equal(integrityOf(database), 'ok')
  })

  test('when the backup names a symbolic link, a FIFO, a socket or a device, then it refuses in one line naming what it is, with --force too, and each is left as it was', async (t) => {
    const cwd = temporaryDirectory(t)
    assert.equal((await runCli(['seed', '--count', '3'], {}, cwd)).status, 0)
    // A link to a file elsewhere, which --force replaced with the backup (the link gone, its file unread).
    const elsewhere = join(temporaryDirectory(t), 'kept.db')
    writeFileSync(elsewhere, 'kept')
    symlinkSync(elsewhere, join(cwd, 'linked.db'))
    execFileSync('mkfifo', [join(cwd, 'pipe')])
    const listener = createServer()
    await new Promise<void>((resolve) => listener.listen(join(cwd, 'socket'), resolve))
    t.after(() => listener.close())
    const kinds: Array<[string, string]> = [
      ['linked.db', 'a symbolic link'],
      ['pipe', 'a FIFO (named pipe)'],
      ['socket', 'a socket'],
    ]
    // Only root can make a device (mknod): /dev/null's kind, which a backup run as root replaced.
    if (process.getuid?.() === 0) {
      execFileSync('mknod', [join(cwd, 'nulldev'), 'c', '1', '3'])
      kinds.push(['nulldev', 'a character device'])
    } else t.diagnostic('not root: no device is made, so none is tried')
    const before = new Map(kinds.map(([name]) => [name, lstatSync(join(cwd, name))]))
    // Without --force, the same line: "give --force" would send the operator on to the same refusal.
    for (const args of [...kinds.map(([to]) => ['--to', to, '--force']), ['--to', 'linked.db']]) {
      const refused = await runCli(['backup', ...args], {}, cwd)
      const [, to] = args
      const kind = kinds.find(([name]) => name === to)?.[1]
      assert.deepEqual(
        [refused.status, refused.stderr],
        [1, `petstore backup: ${to} is ${kind}: --force replaces only a regular file; name another file\n`],
        args.join(' '),
      )
    }
    for (const [name, stats] of before) {
      const now = lstatSync(join(cwd, name))
      assert.deepEqual([now.ino, now.mode, now.rdev], [stats.ino, stats.mode, stats.rdev], `${name} kept`)
    }
    assert.equal(readFileSync(elsewhere, 'utf8'), 'kept')
    assert.deepEqual(readdirSync(cwd).sort(), ['data', ...before.keys()].sort(), 'no file left beside them')
  })

  test("when a backup is written, then only its owner may read or write it (0600), whatever the umask, the database's mode or the file it replaces", async (t) => {
    const cwd = temporaryDirectory(t)
    assert.equal((await runCli(['seed', '--count', '3'], {}, cwd)).status, 0)
    chmodSync(join(cwd, 'data', 'petstore.db'), 0o644)
    writeFileSync(join(cwd, 'replaced.db'), '')
    chmodSync(join(cwd, 'replaced.db'), 0o666)
    for (const args of [
      ['--to', 'fresh.db'],
      ['--to', 'replaced.db', '--force'],
    ]) {
      const result = await runCli(['backup', ...args], {}, cwd)
      assert.equal(result.status, 0, result.stderr)
      assert.equal(statSync(join(cwd, args[1] as string)).mode & 0o777, 0o600, args.join(' '))
    }
  })

  test("when the backup's name is near the file system's limit of 255 bytes, then the backup, and a restore from it, work: the hidden copy made beside it takes a shorter name", async (t) => {
    const cwd = temporaryDirectory(t)
    // 250 bytes, é being two: a copy named after it in full, with its suffix, would pass 255.
    const to = `${'b'.repeat(242)}é${'b'.repeat(3)}.db`
    assert.equal((await runCli(['seed', '--count', '3'], {}, cwd)).status, 0)
    // What a backup to the same name killed mid-way left: its name cut as this one's, its process gone.
    const gone = spawnSync('true').pid as number
    const leftover = temporaryBeside(join(cwd, to), 'backup').replace(`-${process.pid}-`, `-${gone}-`)
    writeFileSync(leftover, '')
    const backup = await runCli(['backup', '--to', to], {}, cwd)
    assert.equal(backup.status, 0, backup.stderr)
    assert.equal(integrityOf(join(cwd, to)), 'ok')
    assert.deepEqual(readdirSync(cwd).sort(), ['data', to].sort(), 'no hidden copy left, nor the leftover')
    const restored = await runCli(['restore', '--from', to], {}, cwd)
    assert.equal(restored.status, 0, restored.stderr)
  })

  test("when the database's own name leaves no room for the name the database it replaces is kept under, then the restore refuses in one line naming the limit and changes nothing; at the limit, it restores", async (t) => {
    const cwd = temporaryDirectory(t)
    assert.equal((await runCli(['seed', '--count', '2'], {}, cwd)).status, 0)
    assert.equal((await runCli(['backup', '--to', 'b.db'], {}, cwd)).status, 0)
    // `<name>.replacing-2026-12-06T05-06-55-427Z`, the kept database's first name, passes 255 bytes from a
    // name of 221 on; its last, `.replaced-…`, is a byte shorter.
    for (const [bytes, refused] of [
      [221, true],
      [220, false],
    ] as const) {
      const name = `${'d'.repeat(bytes - 3)}.db`
      const env = { DATABASE_URL: `sqlite:${name}` }
      assert.equal((await runCli(['seed', '--count', '1'], env, cwd)).status, 0)
      const before = readFileSync(join(cwd, name))
      const restored = await runCli(['restore', '--from', 'b.db'], env, cwd)
      if (refused) {
        assert.deepEqual(
          [restored.status, restored.stderr],
          [
            1,
            `petstore restore: ${name} is 221 bytes long: the database it replaces is kept beside it under its name and .replacing-<time>, then .replaced-<time>, which would pass the 255 bytes a file name may hold; give the database a name of at most 220 bytes\n`,
          ],
        )
        assert.deepEqual(readFileSync(join(cwd, name)), before, 'the database is untouched')
        assert.deepEqual(readdirSync(cwd).sort(), ['b.db', 'data', name].sort(), 'nothing left beside it')
      } else {
        assert.equal(restored.status, 0, restored.stderr)
        const kept = readdirSync(cwd).filter((entry) => entry.startsWith(`${name}.replaced-`))
        assert.deepEqual(
          kept.map((entry) => Buffer.byteLength(entry)),
          [254],
        )
      }
    }
  })

  test('when more than ten keys were made since the backup, then the restore line names ten and counts the rest', async (t) => {
    const cwd = temporaryDirectory(t)
    assert.equal((await runCli(['seed', '--count', '1'], {}, cwd)).status, 0)
    assert.equal((await runCli(['backup', '--to', 'b.db'], {}, cwd)).status, 0)
    const names = Array.from({ length: 11 }, (_, i) => `k${String(i + 1).padStart(2, '0')}`)
    for (const name of names)
      assert.equal((await runCli(['keys', 'create', '--name', name], {}, cwd)).status, 0, name)
    const restored = await runCli(['restore', '--from', 'b.db'], {}, cwd)
    assert.equal(restored.status, 0, restored.stderr)
    assert.ok(
      restored.stdout.endsWith(
        `; 11 keys made since the backup are not in it: ${names.slice(0, 10).join(', ')} and 1 more (keys list on the database it replaced names them)\n`,
      ),
      restored.stdout,
    )
  })
})
