import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { describe, test } from 'node:test'
import { generateApiKey } from '../src/auth/api-key.ts'
import { runCli } from './helpers/cli-process.ts'
import { integrityOf } from './helpers/sqlite-backup-fixtures.ts'
import { temporaryDirectory } from './helpers/test-server.ts'

describe('backup and restore (SQLite)', () => {
  test('when restore is given a FIFO, a socket or a device (through a symbolic link too), then it refuses at once in one line naming what it is, and nothing is made beside the database; a link to a backup is followed', {
    timeout: 60_000,
  }, async (t) => {
    const cwd = temporaryDirectory(t)
    assert.equal((await runCli(['seed', '--count', '3'], {}, cwd)).status, 0)
    assert.equal((await runCli(['backup', '--to', 'b.db'], {}, cwd)).status, 0)
    const data = join(cwd, 'data')
    const database = join(data, 'petstore.db')
    // Read, a FIFO waited for a writer for ever, the database held; a SIGKILL then left a -wal beside it.
    execFileSync('mkfifo', [join(cwd, 'pipe')])
    symlinkSync('pipe', join(cwd, 'linked-pipe'))
    const listener = createServer()
    await new Promise<void>((resolve) => listener.listen(join(cwd, 'socket'), resolve))
    t.after(() => listener.close())
    const before = { files: readdirSync(data), stats: statSync(database) }
    const kinds: Array<[string, string]> = [
      ['pipe', 'a FIFO (named pipe)'],
      ['linked-pipe', 'a FIFO (named pipe)'],
      ['socket', 'a socket'],
      ['/dev/null', 'a character device'],
    ]
    for (const [from, kind] of kinds) {
      const refused = await runCli(['restore', '--from', from], {}, cwd, { timeoutMs: 15_000 })
      assert.deepEqual(
        [refused.status, refused.stderr],
        [1, `petstore restore: ${from} is ${kind}: name a backup file\n`],
        from,
      )
    }
    assert.deepEqual(readdirSync(data), before.files, 'nothing made beside the database')
    const after = statSync(database)
    assert.deepEqual([after.ino, after.mtimeMs], [before.stats.ino, before.stats.mtimeMs], 'the same file')

    symlinkSync('b.db', join(cwd, 'linked.db'))
    const restored = await runCli(['restore', '--from', 'linked.db'], {}, cwd)
    assert.equal(restored.status, 0, restored.stderr)
    const [from, into] = [join(cwd, 'linked.db'), join(cwd, 'data', 'petstore.db')].map(RegExp.escape)
    assert.match(restored.stdout, new RegExp(`^restored 3 pets from ${from} into ${into};`))
  })

  test('when the backup file exists, or the restore file is not a Pet Store database, then the command refuses and changes nothing', async (t) => {
    const cwd = temporaryDirectory(t)
    const env = { API_KEYS: `cli:${generateApiKey()}` }
    assert.equal((await runCli(['seed', '--count', '5'], env, cwd)).status, 0)
    assert.equal((await runCli(['backup', '--to', 'b.db'], env, cwd)).status, 0)
    const again = await runCli(['backup', '--to', 'b.db'], env, cwd)
    assert.deepEqual(
      [again.status, again.stderr],
      [1, 'petstore backup: b.db already exists (give --force to replace it)\n'],
    )
    assert.equal((await runCli(['backup', '--to', 'b.db', '--force'], env, cwd)).status, 0)
    // A file that stands alone: the rollback journal (header bytes 18 and 19 are 1), not a WAL it would need.
    const backupBytes = readFileSync(join(cwd, 'b.db'))
    assert.deepEqual([backupBytes[18], backupBytes[19]], [1, 1], 'the backup is not in WAL mode')

    // The same backup with a page of its pets overwritten: a file a disk or a copy damaged.
    const damaged = Buffer.from(backupBytes)
    const pageSize = damaged.readUInt16BE(16)
    damaged.fill(0x5a, pageSize * 2 + 8, pageSize * 3)
    writeFileSync(join(cwd, 'damaged.db'), damaged)
    const broken = await runCli(['restore', '--from', 'damaged.db'], env, cwd)
    assert.equal(broken.status, 1, broken.stderr)
    assert.match(
      broken.stderr,
      /^petstore restore: damaged\.db (fails the integrity check|is not a Pet Store database)[^\n]*\n$/,
      'one line',
    )

    // Cut short, as a copy that ran out of room: SQLite's own words, said of the file.
    writeFileSync(join(cwd, 'cut.db'), backupBytes.subarray(0, pageSize * 2))
    const cut = await runCli(['restore', '--from', 'cut.db'], env, cwd)
    assert.equal(cut.status, 1, cut.stderr)
    assert.match(
      cut.stderr,
      /^petstore restore: cut\.db (fails the integrity check|cannot be read as a database \(SQLite: .+\))\n$/,
    )
    mkdirSync(join(cwd, 'backups'))
    const directory = await runCli(['restore', '--from', 'backups'], env, cwd)
    assert.deepEqual(
      [directory.status, directory.stderr],
      [1, 'petstore restore: backups is a directory: name a backup file\n'],
    )

    writeFileSync(
      join(cwd, 'junk.db'),
      'not a database at all, but long enough to look like a header\n'.repeat(20),
    )
    const junk = await runCli(['restore', '--from', 'junk.db'], env, cwd)
    assert.deepEqual([junk.status, junk.stderr], [1, 'petstore restore: junk.db is not a SQLite database\n'])
    const other = new DatabaseSync(join(cwd, 'other.db'))
    other.exec('CREATE TABLE t (x)')
    other.close()
    const foreign = await runCli(['restore', '--from', 'other.db'], env, cwd)
    assert.deepEqual(
      [foreign.status, foreign.stderr],
      [1, 'petstore restore: other.db is not a Pet Store database (no schema_migrations table)\n'],
    )
    // golang-migrate's bookkeeping, of the same name as the service's.
    const tool = new DatabaseSync(join(cwd, 'tool.db'))
    tool.exec(
      'CREATE TABLE schema_migrations (version INTEGER, dirty INTEGER); INSERT INTO schema_migrations VALUES (2, 0)',
    )
    tool.close()
    const tools = await runCli(['restore', '--from', 'tool.db'], env, cwd)
    assert.deepEqual(
      [tools.status, tools.stderr],
      [
        1,
        "petstore restore: tool.db is not a Pet Store database (its schema_migrations is another tool's)\n",
      ],
    )
    assert.equal(
      (await runCli(['seed', '--count', '1'], env, cwd)).stdout,
      'added 1 pet\n',
      'the database still works',
    )
    assert.equal(integrityOf(join(cwd, 'data', 'petstore.db')), 'ok')
  })

  test('when DATABASE_URL names a FIFO, then backup refuses at once in one line saying what it is, and writes nothing', async (t) => {
    const cwd = temporaryDirectory(t)
    execFileSync('mkfifo', [join(cwd, 'pipe')])
    const refused = await runCli(['backup', '--to', 'b.db'], { DATABASE_URL: 'sqlite:pipe' }, cwd)
    assert.deepEqual(
      [refused.status, refused.stderr],
      [
        1,
        `petstore backup: ${join(cwd, 'pipe')} is a FIFO (named pipe): DATABASE_URL must name a database file\n`,
      ],
    )
    assert.deepEqual(readdirSync(cwd), ['pipe'])
  })

  test('when the database is at a newer schema this release runs on (after a rollback), then backup and restore take it and copy refuses it; at one that needs a newer release, backup refuses too', async (t) => {
    const cwd = temporaryDirectory(t)
    assert.equal((await runCli(['seed', '--count', '3'], {}, cwd)).status, 0)
    const database = join(cwd, 'data', 'petstore.db')
    const newer = (version: number, floor: number) => {
      const db = new DatabaseSync(database)
      db.prepare('INSERT INTO schema_migrations (version, name, compatible_from) VALUES (?, ?, ?)').run(
        version,
        'a newer release',
        floor,
      )
      db.close()
    }
    newer(3, 2)
    const backup = await runCli(['backup', '--to', 'rollback.db'], {}, cwd)
    assert.equal(backup.status, 0, backup.stderr)
    const restore = await runCli(['restore', '--from', 'rollback.db'], {}, cwd)
    assert.equal(restore.status, 0, restore.stderr)
    const copy = await runCli(
      ['copy', '--from', 'sqlite:data/petstore.db', '--to', 'sqlite:copy.db'],
      {},
      cwd,
    )
    assert.deepEqual(
      [copy.status, copy.stderr],
      [
        1,
        "petstore copy: the source is at schema version 3, newer than this release's (2): copy with the release that made it\n",
      ],
    )
    newer(4, 4)
    const refused = await runCli(['backup', '--to', 'later.db'], {}, cwd)
    // Said of the database, before a copy is made of it (it blamed "the backup" the copy made).
    assert.deepEqual(
      [refused.status, refused.stderr],
      [
        1,
        'petstore backup: database schema version 4 is newer than this release knows (2) and needs a release made for schema 4 or later: back it up with that release\n',
      ],
    )
    assert.deepEqual(readdirSync(cwd).sort(), ['data', 'rollback.db'])
  })

  test('when the store is PostgreSQL, then backup and restore --from refuse in one line pointing to pg_dump, pg_restore and restore --replacing', async (t) => {
    const cwd = temporaryDirectory(t)
    const env = { DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' }
    for (const args of [
      ['backup', '--to', 'x.db'],
      ['restore', '--from', 'x.db'],
    ]) {
      const result = await runCli(args, env, cwd)
      assert.equal(result.status, 1)
      assert.match(
        result.stderr,
        /^petstore \w+: \w+ \S+ a SQLite file only: on PostgreSQL, back up with pg_dump -Fc, restore with pg_restore into a new database, then run petstore restore --replacing \(README, "Backups and restores"\)\n$/,
      )
    }
  })
})
