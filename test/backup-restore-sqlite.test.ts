import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import {
  chmodSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { createServer } from 'node:net'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { describe, test } from 'node:test'
import { setTimeout } from 'node:timers/promises'
import { generateApiKey } from '../src/auth/api-key.ts'
import { waitUntil } from './helpers/bounded-wait.ts'
import { runCli, stop } from './helpers/cli-process.ts'
import { checkedFetch } from './helpers/conformance-fetch.ts'
import { openElsewhere } from './helpers/open-files.ts'
import { petLedger } from './helpers/pet-ledger.ts'
import { newSetTestLog, startWriters, walkCatalogue } from './helpers/set-test.ts'
import { integrityOf, serve } from './helpers/sqlite-backup-fixtures.ts'
import { temporaryDirectory } from './helpers/test-server.ts'

describe('backup and restore (SQLite)', () => {
  test('when a backup is taken while writers create pets, then it holds every pet acknowledged before it started, passes the integrity check and serves after a restore', {
    timeout: 180_000,
  }, async (t) => {
    const cwd = temporaryDirectory(t)
    const key = generateApiKey()
    // The service's own write thread commits on a connection of its own, as in production.
    const env = { API_KEYS: `backup:${key}`, RATE_LIMIT_PER_MINUTE: '0', SQLITE_WRITE_THREAD: 'on' }
    const server = await serve(t, env, cwd)
    const log = newSetTestLog()
    const writers = startWriters({ count: 6, log, key, origin: () => server.origin })
    t.after(() => writers.stop())
    await waitUntil(
      () => log.ok.size >= 300,
      () => `only ${log.ok.size} creates acknowledged`,
      {
        timeoutMs: 60_000,
      },
    )

    const acknowledgedBefore = new Map(log.ok)
    const backup = await runCli(['backup', '--to', 'petstore-backup.db'], env, cwd, { timeoutMs: 120_000 })
    const acknowledgedDuring = log.ok.size - acknowledgedBefore.size
    await writers.stop()
    assert.equal(backup.status, 0, backup.stderr)
    assert.match(backup.stdout, /^backed up \d+ pets to petstore-backup\.db \(\d+ bytes\)\n$/)
    t.diagnostic(
      `${acknowledgedBefore.size} pets acknowledged before the backup, ${acknowledgedDuring} during it`,
    )
    assert.equal(integrityOf(join(cwd, 'petstore-backup.db')), 'ok')

    // Restored where another service starts: a new directory, a database that does not exist yet.
    const elsewhere = temporaryDirectory(t)
    const restoredEnv = { ...env, DATABASE_URL: `sqlite:${join(elsewhere, 'restored.db')}` }
    const restore = await runCli(
      ['restore', '--from', join(cwd, 'petstore-backup.db')],
      restoredEnv,
      elsewhere,
    )
    assert.equal(restore.status, 0, restore.stderr)
    const restored = await serve(t, restoredEnv, elsewhere)
    const served = await walkCatalogue(restored.origin, key)
    const missing = [...acknowledgedBefore].filter(([name, body]) => served.get(name) !== body)
    assert.deepEqual(missing, [], 'every pet acknowledged before the backup is served, byte for byte')
    const unsent = [...served.keys()].filter((name) => !log.sent.has(name))
    assert.deepEqual(unsent, [], 'nothing that was never sent')
    await stop(restored)
    await stop(server)
  })

  test('when a server has the database open, then restore refuses in one line (exit 1) and the database is unchanged; once stopped, the restore goes through', {
    timeout: 120_000,
  }, async (t) => {
    const cwd = temporaryDirectory(t)
    const key = generateApiKey()
    const env = { API_KEYS: `restore:${key}`, RATE_LIMIT_PER_MINUTE: '0' }
    const ledger = petLedger(key)
    let server = await serve(t, env, cwd)
    await ledger.createAcknowledged(server, 3)
    assert.equal((await runCli(['backup', '--to', 'three.db'], env, cwd)).status, 0)
    const threePets = new Map(ledger.acknowledged)
    await ledger.createAcknowledged(server, 3)

    const refused = await runCli(['restore', '--from', 'three.db'], env, cwd)
    assert.equal(refused.status, 1)
    assert.match(
      refused.stderr,
      /^petstore restore: \S+petstore\.db is in use \(a server or another command has it open\): stop it, then restore\n$/,
    )
    await ledger.assertAllPresent(server)
    assert.deepEqual(
      readdirSync(join(cwd, 'data')).filter((name) => name.endsWith('.tmp')),
      [],
      'no temporary file left',
    )
    await stop(server)

    const restored = await runCli(['restore', '--from', 'three.db'], env, cwd)
    assert.equal(restored.status, 0, restored.stderr)
    assert.match(
      restored.stdout,
      /^restored 3 pets from three\.db into data\/petstore\.db; the database it replaced \(\d+ pets\) is kept at \S+petstore\.db\.replaced-\S+: delete it once this one is checked\n$/,
    )
    server = await serve(t, env, cwd)
    ledger.acknowledged.clear()
    for (const [id, body] of threePets) ledger.acknowledged.set(id, body)
    await ledger.assertAllPresent(server)
    await stop(server)
  })

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
    assert.match(restored.stdout, /^restored 3 pets from linked\.db into data\/petstore\.db/)
  })

  // A restored database is in rollback mode until its first start turns WAL on, which needs the file alone for
  // a moment: a read under way then (an operator's sqlite3, a monitor's count) is waited out, not taken for
  // a restore holding the file (docs/decisions.md, "Durability").
  test('when a server starts on a database not yet in WAL mode (a backup) while another process reads it, then the start waits for the read to end and serves, instead of refusing the file as held', {
    timeout: 60_000,
  }, async (t) => {
    const cwd = temporaryDirectory(t)
    const key = generateApiKey()
    assert.equal((await runCli(['seed', '--count', '3'], {}, cwd)).status, 0)
    assert.equal((await runCli(['backup', '--to', 'b.db'], {}, cwd)).status, 0)
    const backup = join(cwd, 'b.db')
    const reader = new DatabaseSync(backup, { readOnly: true })
    t.after(() => reader.close())
    reader.exec('BEGIN')
    reader.prepare('SELECT count(*) FROM pets').get()

    let settled = false
    const env = { DATABASE_URL: 'sqlite:b.db', API_KEYS: `after:${key}` }
    const starting = serve(t, env, cwd).finally(() => {
      settled = true
    })
    starting.catch(() => {}) // awaited below
    // The read ends only once the server has the file open and is turning WAL on: without a wait there, it
    // would have refused the file by now.
    await waitUntil(() => settled || openElsewhere(backup), 'the server never opened the file', {
      timeoutMs: 20_000,
      everyMs: 10,
    })
    await setTimeout(200)
    reader.exec('COMMIT')
    const server = await starting
    const listed = await checkedFetch(server.origin, '/v1/pets', {
      headers: { authorization: `Bearer ${key}` },
    })
    assert.equal(listed.status, 200)
    assert.equal(((await listed.json()) as unknown[]).length, 3)
    await stop(server)
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
