import assert from 'node:assert/strict'
import { type ChildProcess, execFileSync, spawnSync } from 'node:child_process'
import {
  chmodSync,
  chownSync,
  closeSync,
  linkSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  truncateSync,
  utimesSync,
  writeFileSync,
  writeSync,
} from 'node:fs'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { describe, type TestContext, test } from 'node:test'
import { generateApiKey } from '../src/auth/api-key.ts'
import { waitUntil } from './helpers/bounded-wait.ts'
import { runCliAsync } from './helpers/cli-async.ts'
import {
  CLI,
  cliEnvironment,
  runCli,
  type ServeProcess,
  startServeProcess,
  stop,
} from './helpers/cli-process.ts'
import { petLedger } from './helpers/pet-ledger.ts'
import { newSetTestLog, startWriters, walkCatalogue } from './helpers/set-test.ts'
import { readOnly, rowCount } from './helpers/sqlite-file.ts'
import { fillFileSystem, mountingSuiteOptions, mountTmpfs } from './helpers/storage-faults.ts'
import { suiteNeeding } from './helpers/suite-requirements.ts'
import { temporaryDirectory } from './helpers/test-server.ts'

/** A serve process, killed after the test if it is still running. */
async function serve(t: TestContext, env: Record<string, string>, cwd: string): Promise<ServeProcess> {
  const server = await startServeProcess(env, cwd)
  t.after(() => server.child.kill('SIGKILL'))
  return server
}

function integrityOf(path: string): unknown {
  return readOnly(path, (db) => db.prepare('PRAGMA integrity_check').get()?.integrity_check)
}

/** Root is needed to run a command as another user. */
function rootLack() {
  return process.getuid?.() === 0 ? undefined : { missing: 'not root', remedy: 'run the tests as root' }
}

/** A directory (of `mode`) with a database of 3 pets and its backup `b.db`, which any user may read. */
function backedUpForAnotherUser(t: TestContext, mode: number): string {
  const cwd = temporaryDirectory(t)
  chmodSync(cwd, mode)
  assert.equal(runCli(['seed', '--count', '3'], {}, cwd).status, 0)
  assert.equal(runCli(['backup', '--to', 'b.db'], {}, cwd).status, 0)
  chmodSync(join(cwd, 'b.db'), 0o644)
  return cwd
}

/** A process that commits `pets` pets into the database's write-ahead log, then is killed before any checkpoint. */
function commitIntoLogThenDie(database: string, pets: number): void {
  const writer = spawnSync(process.execPath, [
    '-e',
    `const { DatabaseSync } = require('node:sqlite')
     const db = new DatabaseSync(${JSON.stringify(database)})
     db.exec('PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0')
     const insert = db.prepare("INSERT INTO pets (name, category_id) VALUES ('logged', 1)")
     db.exec('BEGIN'); for (let i = 0; i < ${pets}; i++) insert.run(); db.exec('COMMIT')
     process.kill(process.pid, 'SIGKILL')`,
  ])
  assert.equal(writer.signal, 'SIGKILL')
}

function petCountOf(path: string): number {
  return rowCount(path, 'pets')
}

/** Whether process `pid` waits in an open() of a FIFO for its other end (Linux's /proc). */
function waitsOnFifo(pid: number): boolean {
  const read = (what: string) => readFileSync(`/proc/${pid}/${what}`, 'utf8').trim()
  try {
    // The kernel's wait for a FIFO's partner; where wait channels are hidden, a blocked openat (x86-64, arm64).
    return read('wchan') === 'wait_for_partner' || /^(257|56) /.test(read('syscall'))
  } catch {
    return false
  }
}

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
    const backup = await runCliAsync(['backup', '--to', 'petstore-backup.db'], env, cwd)
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
    const restore = runCli(['restore', '--from', join(cwd, 'petstore-backup.db')], restoredEnv, elsewhere)
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
    assert.equal(runCli(['backup', '--to', 'three.db'], env, cwd).status, 0)
    const threePets = new Map(ledger.acknowledged)
    await ledger.createAcknowledged(server, 3)

    const refused = runCli(['restore', '--from', 'three.db'], env, cwd)
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

    const restored = runCli(['restore', '--from', 'three.db'], env, cwd)
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

  test('when a server starts while a restore is under way, then the server refuses to start, saying the database is held, and writes nothing into the file being replaced', {
    timeout: 120_000,
  }, async (t) => {
    const cwd = temporaryDirectory(t)
    const env = { API_KEYS: `restore:${generateApiKey()}` }
    assert.equal(runCli(['seed', '--count', '3'], env, cwd).status, 0)
    const database = join(cwd, 'data', 'petstore.db')
    // Reading a FIFO, the restore's copy waits for a writer: a pause after the database is held, before the
    // rename, as long as the test needs. An empty FIFO then makes the restore fail, changing nothing.
    const fifo = join(cwd, 'slow-backup.db')
    execFileSync('mkfifo', [fifo])
    let restorer: ChildProcess | undefined
    const restore = runCliAsync(['restore', '--from', fifo], env, cwd, {
      started: (child) => {
        restorer = child
      },
    })
    // Seen on two polls in a row: any other open() is over long before the next.
    let seen = 0
    await waitUntil(
      () => {
        seen = restorer?.pid !== undefined && waitsOnFifo(restorer.pid) ? seen + 1 : 0
        return seen >= 2
      },
      () => 'the restore never reached its copy',
      { timeoutMs: 30_000, everyMs: 50 },
    )

    const server = await runCliAsync(['serve'], { ...env, PORT: '0' }, cwd, { timeoutMs: 30_000 })
    assert.equal(server.status, 1, server.stderr)
    assert.match(
      server.stderr,
      /cannot open the database \S+petstore\.db: database is locked \(another process holds it exclusively, as a restore does until it ends\): start again then\n$/,
    )

    closeSync(openSync(fifo, 'w'))
    const ended = await restore
    assert.deepEqual(
      [ended.status, ended.stderr],
      [1, `petstore restore: ${fifo} is not a Pet Store database (no schema_migrations table)\n`],
    )
    assert.equal(integrityOf(database), 'ok')
    assert.equal(petCountOf(database), 3, 'the database as it was')
  })

  test('when the backup file exists, or the restore file is not a Pet Store database, then the command refuses and changes nothing', async (t) => {
    const cwd = temporaryDirectory(t)
    const env = { API_KEYS: `cli:${generateApiKey()}` }
    assert.equal(runCli(['seed', '--count', '5'], env, cwd).status, 0)
    assert.equal(runCli(['backup', '--to', 'b.db'], env, cwd).status, 0)
    const again = runCli(['backup', '--to', 'b.db'], env, cwd)
    assert.deepEqual(
      [again.status, again.stderr],
      [1, 'petstore backup: b.db already exists (give --force to replace it)\n'],
    )
    assert.equal(runCli(['backup', '--to', 'b.db', '--force'], env, cwd).status, 0)
    // A file that stands alone: the rollback journal (header bytes 18 and 19 are 1), not a WAL it would need.
    const backupBytes = readFileSync(join(cwd, 'b.db'))
    assert.deepEqual([backupBytes[18], backupBytes[19]], [1, 1], 'the backup is not in WAL mode')

    // The same backup with a page of its pets overwritten: a file a disk or a copy damaged.
    const damaged = Buffer.from(backupBytes)
    const pageSize = damaged.readUInt16BE(16)
    damaged.fill(0x5a, pageSize * 2 + 8, pageSize * 3)
    writeFileSync(join(cwd, 'damaged.db'), damaged)
    const broken = runCli(['restore', '--from', 'damaged.db'], env, cwd)
    assert.equal(broken.status, 1, broken.stderr)
    assert.match(
      broken.stderr,
      /^petstore restore: damaged\.db (fails the integrity check|is not a Pet Store database)[^\n]*\n$/,
      'one line',
    )

    // Cut short, as a copy that ran out of room: SQLite's own words, said of the file.
    writeFileSync(join(cwd, 'cut.db'), backupBytes.subarray(0, pageSize * 2))
    const cut = runCli(['restore', '--from', 'cut.db'], env, cwd)
    assert.equal(cut.status, 1, cut.stderr)
    assert.match(
      cut.stderr,
      /^petstore restore: cut\.db (fails the integrity check|cannot be read as a database \(SQLite: .+\))\n$/,
    )
    mkdirSync(join(cwd, 'backups'))
    const directory = runCli(['restore', '--from', 'backups'], env, cwd)
    assert.deepEqual(
      [directory.status, directory.stderr],
      [1, 'petstore restore: backups is a directory: name a backup file\n'],
    )

    writeFileSync(
      join(cwd, 'junk.db'),
      'not a database at all, but long enough to look like a header\n'.repeat(20),
    )
    const junk = runCli(['restore', '--from', 'junk.db'], env, cwd)
    assert.deepEqual([junk.status, junk.stderr], [1, 'petstore restore: junk.db is not a SQLite database\n'])
    const other = new DatabaseSync(join(cwd, 'other.db'))
    other.exec('CREATE TABLE t (x)')
    other.close()
    const foreign = runCli(['restore', '--from', 'other.db'], env, cwd)
    assert.deepEqual(
      [foreign.status, foreign.stderr],
      [1, 'petstore restore: other.db is not a Pet Store database (no schema_migrations table)\n'],
    )
    assert.equal(
      runCli(['seed', '--count', '1'], env, cwd).stdout,
      'added 1 pet\n',
      'the database still works',
    )
    assert.equal(integrityOf(join(cwd, 'data', 'petstore.db')), 'ok')
  })

  test('when the backup would replace the database itself (or a companion file), or names a directory, then it refuses in one line and the database is untouched', async (t) => {
    const cwd = temporaryDirectory(t)
    const env = { API_KEYS: `cli:${generateApiKey()}` }
    assert.equal(runCli(['seed', '--count', '5'], env, cwd).status, 0)
    const database = join(cwd, 'data', 'petstore.db')
    const before = statSync(database).ino
    for (const to of [
      'data/petstore.db',
      './data/../data/petstore.db',
      database,
      'data/petstore.db-wal',
      'data/petstore.db/',
    ]) {
      const refused = runCli(['backup', '--to', to, '--force'], env, cwd)
      assert.deepEqual(
        [refused.status, refused.stderr],
        [
          1,
          `petstore backup: ${to} is the database being backed up (or one of its files): name another file\n`,
        ],
      )
    }
    for (const to of ['data', 'data/']) {
      const directory = runCli(['backup', '--to', to, '--force'], env, cwd)
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
      runCli(['seed', '--count', '1'], env, cwd).stdout,
      'added 1 pet\n',
      'the database still works',
    )
    assert.equal(integrityOf(database), 'ok')
  })

  test("when a backup is written, then only its owner may read or write it (0600), whatever the umask, the database's mode or the file it replaces", (t) => {
    const cwd = temporaryDirectory(t)
    assert.equal(runCli(['seed', '--count', '3'], {}, cwd).status, 0)
    chmodSync(join(cwd, 'data', 'petstore.db'), 0o644)
    writeFileSync(join(cwd, 'replaced.db'), '')
    chmodSync(join(cwd, 'replaced.db'), 0o666)
    for (const args of [
      ['--to', 'fresh.db'],
      ['--to', 'replaced.db', '--force'],
    ]) {
      const result = runCli(['backup', ...args], {}, cwd)
      assert.equal(result.status, 0, result.stderr)
      assert.equal(statSync(join(cwd, args[1] as string)).mode & 0o777, 0o600, args.join(' '))
    }
  })

  test('when the database is at a newer schema this release runs on (after a rollback), then backup and restore take it and copy refuses it; at one that needs a newer release, backup refuses too', (t) => {
    const cwd = temporaryDirectory(t)
    assert.equal(runCli(['seed', '--count', '3'], {}, cwd).status, 0)
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
    const backup = runCli(['backup', '--to', 'rollback.db'], {}, cwd)
    assert.equal(backup.status, 0, backup.stderr)
    const restore = runCli(['restore', '--from', 'rollback.db'], {}, cwd)
    assert.equal(restore.status, 0, restore.stderr)
    const copy = runCli(['copy', '--from', 'sqlite:data/petstore.db', '--to', 'sqlite:copy.db'], {}, cwd)
    assert.deepEqual(
      [copy.status, copy.stderr],
      [
        1,
        "petstore copy: the source is at schema version 3, newer than this release's (2): copy with the release that made it\n",
      ],
    )
    newer(4, 4)
    const refused = runCli(['backup', '--to', 'later.db'], {}, cwd)
    assert.equal(refused.status, 1)
    assert.match(
      refused.stderr,
      /has schema version 4, which needs a release made for schema 4 or later \(this one knows 2\)\n$/,
    )
  })

  test('when a backup older than the database is restored, then revocations made since stay, no pet id given out since is given again, the database replaced is kept aside, and the line says so', (t) => {
    const cwd = temporaryDirectory(t)
    const key = (name: string) => {
      const made = runCli(['keys', 'create', '--name', name], {}, cwd)
      assert.equal(made.status, 0, made.stderr)
      return made.stdout.trim()
    }
    key('kept')
    key('leaked')
    assert.equal(runCli(['seed', '--count', '3'], {}, cwd).status, 0)
    assert.equal(runCli(['backup', '--to', 'b.db'], {}, cwd).status, 0)
    // Since the backup: a key revoked (leaked), pets 4 to 8 handed out, a key made.
    assert.equal(runCli(['keys', 'revoke', 'leaked'], {}, cwd).status, 0)
    assert.equal(runCli(['seed', '--count', '5'], {}, cwd).status, 0)
    key('newer')
    const database = join(cwd, 'data', 'petstore.db')
    const itself = runCli(['restore', '--from', database], {}, cwd)
    assert.equal(itself.status, 1)
    assert.match(itself.stderr, /^petstore restore: .* is the database being restored/)

    const restored = runCli(['restore', '--from', 'b.db'], {}, cwd)
    assert.equal(restored.status, 0, restored.stderr)
    const said =
      /^restored 3 pets from b\.db into (.+); the database it replaced \(8 pets\) is kept at (.+): delete it once this one is checked; 1 revocation made since the backup kept; 1 key made since the backup is not in it\n$/.exec(
        restored.stdout,
      )
    assert.ok(said, restored.stdout)
    const aside = said[2] as string
    assert.equal(statSync(aside).mode & 0o777, 0o600)
    assert.equal(petCountOf(aside), 8, 'the replaced database, whole')
    assert.equal(integrityOf(aside), 'ok')

    const keys = JSON.parse(runCli(['keys', 'list', '--json'], {}, cwd).stdout) as Array<{
      name: string
      revokedAt?: string | null
    }>
    const leaked = keys.find((listed) => listed.name === 'leaked')
    assert.ok(leaked?.revokedAt, 'a revocation is never undone by a restore')
    assert.equal(
      keys.some((listed) => listed.name === 'newer'),
      false,
    )
    assert.equal(runCli(['seed', '--count', '1'], {}, cwd).status, 0)
    assert.equal(
      readOnly(database, (db) => db.prepare('SELECT max(id) AS n FROM pets').get()?.n),
      9,
      'ids 4 to 8 are not given again',
    )
  })

  test('when the database replaced is damaged past its first pages, or a restore cut short left a second name of it, then the restore goes through and says what it could not keep', (t) => {
    const cwd = temporaryDirectory(t)
    assert.equal(runCli(['seed', '--count', '5'], {}, cwd).status, 0)
    assert.equal(runCli(['backup', '--to', 'b.db'], {}, cwd).status, 0)
    assert.equal(runCli(['seed', '--count', '2000'], {}, cwd).status, 0)
    const database = join(cwd, 'data', 'petstore.db')
    // A crash between the second name and the rename: the live file under a `.replacing-` name.
    linkSync(database, `${database}.replacing-2026-01-01T00-00-00-000Z`)
    const fd = openSync(database, 'r+')
    writeSync(fd, Buffer.alloc(4096, 9), 0, 4096, 4096 * 3)
    closeSync(fd)

    const restored = runCli(['restore', '--from', 'b.db'], {}, cwd)
    assert.equal(restored.status, 0, restored.stderr)
    assert.match(
      restored.stdout,
      /^restored 5 pets from b\.db into .*; the database it replaced .*is kept at \S+: delete it once this one is checked; it could not all be read \(database disk image is malformed\): /,
    )
    assert.deepEqual(
      readdirSync(join(cwd, 'data')).filter((name) => name.includes('.replac')).length,
      1,
      'the leftover second name of the live file is gone; the replaced database is kept once',
    )
    assert.equal(integrityOf(database), 'ok')
    assert.equal(petCountOf(database), 5)
  })

  test('when the file to restore has writes in a write-ahead log beside it (the data of a killed server), then restore refuses, naming the log and what to do, and the database is unchanged; its backup restores every write', (t) => {
    const cwd = temporaryDirectory(t)
    assert.equal(runCli(['seed', '--count', '5'], {}, cwd).status, 0)
    mkdirSync(join(cwd, 'crashed'))
    const crashed = join(cwd, 'crashed', 'petstore.db')
    assert.equal(runCli(['seed', '--count', '10'], { DATABASE_URL: `sqlite:${crashed}` }, cwd).status, 0)
    commitIntoLogThenDie(crashed, 20)
    const log = `${crashed}-wal`
    assert.ok(statSync(log).size > 0, 'the writes are in the log')

    const restore = runCli(['restore', '--from', crashed], {}, cwd)
    assert.deepEqual(
      [restore.status, restore.stdout, restore.stderr],
      [
        1,
        '',
        `petstore restore: ${crashed} has a write-ahead log beside it that may hold writes (${log}), which a copy of the file alone would lose: make a backup of it first (DATABASE_URL=sqlite:${crashed} petstore backup --to FILE), then restore that\n`,
      ],
    )
    // Through a link, SQLite reads the log beside the link's target.
    symlinkSync(crashed, join(cwd, 'latest.db'))
    const linked = runCli(['restore', '--from', 'latest.db'], {}, cwd)
    assert.equal(linked.status, 1, linked.stdout)
    assert.match(
      linked.stderr,
      /^petstore restore: latest\.db has a write-ahead log beside it that may hold writes \(/,
    )
    assert.equal(petCountOf(join(cwd, 'data/petstore.db')), 5, 'the database is unchanged')

    // The way the message gives: every logged write restored.
    const backup = runCli(['backup', '--to', 'rescued.db'], { DATABASE_URL: `sqlite:${crashed}` }, cwd)
    assert.equal(backup.status, 0, backup.stderr)
    assert.equal(runCli(['restore', '--from', 'rescued.db'], {}, cwd).status, 0)
    assert.equal(petCountOf(join(cwd, 'data/petstore.db')), 30)

    // A journal SQLite keeps between transactions (journal_mode=PERSIST) has its header zeroed: no
    // transaction is in it, and the file is whole.
    writeFileSync(join(cwd, 'rescued.db-journal'), Buffer.alloc(8720))
    assert.equal(runCli(['restore', '--from', 'rescued.db'], {}, cwd).status, 0)
  })

  test('when the database is missing but its write-ahead log is there (deleted under a server), then restore refuses as a start does, saying what to do, and changes nothing', (t) => {
    const cwd = temporaryDirectory(t)
    assert.equal(runCli(['seed', '--count', '3'], {}, cwd).status, 0)
    assert.equal(runCli(['backup', '--to', 'b.db'], {}, cwd).status, 0)
    const database = join(cwd, 'data', 'petstore.db')
    commitIntoLogThenDie(database, 5)
    rmSync(database)
    const restore = runCli(['restore', '--from', 'b.db'], {}, cwd)
    assert.deepEqual(
      [restore.status, restore.stderr],
      [
        1,
        `petstore restore: ${database} is missing but its write-ahead log ${database}-wal is there: the database file was deleted or moved while in use. Put it back (the log holds its latest writes), or remove ${database}-wal and ${database}-shm to restore in its place\n`,
      ],
    )
    assert.deepEqual(readdirSync(join(cwd, 'data')).sort(), ['petstore.db-shm', 'petstore.db-wal'])
  })

  test('when a backup or a restore killed mid-way left its hidden copy, then the next one removes it, and keeps one whose process still runs', (t) => {
    const cwd = temporaryDirectory(t)
    assert.equal(runCli(['seed', '--count', '5'], {}, cwd).status, 0)
    // Above any pid the kernel gives: a process that is gone.
    const gone = 2_147_483_647
    const leftovers = [
      join(cwd, `.b.db.backup-${gone}.tmp`),
      join(cwd, `.b.db.backup-${gone}.tmp-journal`),
      join(cwd, 'data', `.petstore.db.restore-${gone}.tmp`),
    ]
    const running = `.b.db.backup-${process.pid}.tmp`
    // Another name's (a dated backup's): a day old, it is removed whatever its process id says (one in
    // another container's numbering); younger, it is left.
    const dayOld = join(cwd, `.petstore-2026-05-01.db.backup-${process.pid}.tmp`)
    const recent = `.petstore-2026-05-02.db.backup-${gone}.tmp`
    for (const file of [...leftovers, dayOld, join(cwd, running), join(cwd, recent)])
      writeFileSync(file, Buffer.alloc(64 * 1024))
    const yesterday = new Date(Date.now() - 25 * 60 * 60 * 1000)
    utimesSync(dayOld, yesterday, yesterday)

    assert.equal(runCli(['backup', '--to', 'b.db'], {}, cwd).status, 0)
    const beside = (directory: string, part: string) =>
      readdirSync(directory).filter((name) => name.includes(part))
    assert.deepEqual(beside(cwd, '.b.db.backup-'), [running], "a running process's copy is left to it")
    assert.deepEqual(beside(cwd, '.petstore-2026-'), [recent])
    assert.equal(runCli(['restore', '--from', 'b.db'], {}, cwd).status, 0)
    assert.deepEqual(beside(join(cwd, 'data'), '.restore-'), [])
  })

  test("when a backup is restored, then the database keeps the owner and mode of the file it replaces, not the backup's", (t) => {
    const cwd = temporaryDirectory(t)
    const env = { API_KEYS: `cli:${generateApiKey()}` }
    assert.equal(runCli(['seed', '--count', '3'], env, cwd).status, 0)
    assert.equal(runCli(['backup', '--to', 'b.db'], env, cwd).status, 0)
    const database = join(cwd, 'data', 'petstore.db')
    // The service's own user (systemd's DynamicUser, a container's), where the backup is root's (cron).
    const asRoot = process.getuid?.() === 0
    if (asRoot) chownSync(database, 65534, 65534)
    chmodSync(database, 0o600)
    chmodSync(join(cwd, 'b.db'), 0o644)
    const restored = runCli(['restore', '--from', 'b.db'], env, cwd)
    assert.equal(restored.status, 0, restored.stderr)
    const after = statSync(database)
    assert.equal(after.mode & 0o777, 0o600)
    if (asRoot) assert.deepEqual([after.uid, after.gid], [65534, 65534])
    else t.diagnostic('not root: the owner kept is not checked, only the mode')

    // A first restore, where no database is yet: its directory's owner, and only its owner may read it.
    const fresh = temporaryDirectory(t)
    mkdirSync(join(fresh, 'data'))
    if (asRoot) chownSync(join(fresh, 'data'), 65534, 65534)
    const first = runCli(['restore', '--from', join(cwd, 'b.db')], env, fresh)
    assert.equal(first.status, 0, first.stderr)
    const made = statSync(join(fresh, 'data', 'petstore.db'))
    assert.equal(made.mode & 0o777, 0o600)
    if (asRoot) assert.deepEqual([made.uid, made.gid], [65534, 65534])
  })

  test("when a user the database's directory is closed to runs backup, restore or keys list, then each says the directory is not open to that user, not that there is no database", {
    ...suiteNeeding('the commands as another user', rootLack()),
  }, (t) => {
    const cwd = backedUpForAnotherUser(t, 0o777)
    const data = join(cwd, 'data')
    assert.equal(statSync(data).mode & 0o777, 0o700, "the service's directory, root's alone here")
    const asAnother = (args: string[]) =>
      spawnSync(process.execPath, [CLI, ...args], {
        cwd,
        env: cliEnvironment({}),
        uid: 1000,
        gid: 1000,
        encoding: 'utf8',
      })
    for (const args of [
      ['backup', '--to', 'mine.db'],
      ['restore', '--from', 'b.db'],
      ['keys', 'list'],
    ]) {
      const result = asAnother(args)
      assert.equal(result.status, 1, result.stderr)
      assert.doesNotMatch(result.stderr, /no database|EACCES/, args.join(' '))
      assert.match(
        result.stderr,
        new RegExp(`^petstore ${args[0]}: .*data is not open to this user`),
        args.join(' '),
      )
    }
  })

  test('when a user that could not give the restored file its owner restores, then it is refused first, naming the owner, and nothing changes', {
    ...suiteNeeding('the restore as another user', rootLack()),
  }, (t) => {
    const cwd = backedUpForAnotherUser(t, 0o755)
    const database = join(cwd, 'data', 'petstore.db')
    chownSync(database, 65534, 65534)
    chmodSync(join(cwd, 'data'), 0o777)
    const before = statSync(database)
    const restore = spawnSync(process.execPath, [CLI, 'restore', '--from', 'b.db'], {
      cwd,
      env: cliEnvironment({}),
      uid: 1000,
      gid: 1000,
      encoding: 'utf8',
    })
    assert.deepEqual(
      [restore.status, restore.stderr],
      [
        1,
        `petstore restore: ${database} belongs to 65534:65534, which this user cannot give the restored file: restore as that user or as root\n`,
      ],
    )
    assert.deepEqual(readdirSync(join(cwd, 'data')), ['petstore.db'])
    assert.equal(statSync(database).mtimeMs, before.mtimeMs)
  })

  test('when the store is PostgreSQL, then backup and restore refuse in one line pointing to pg_dump and pg_restore', (t) => {
    const cwd = temporaryDirectory(t)
    const env = { DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' }
    for (const args of [
      ['backup', '--to', 'x.db'],
      ['restore', '--from', 'x.db'],
    ]) {
      const result = runCli(args, env, cwd)
      assert.equal(result.status, 1)
      assert.match(
        result.stderr,
        /^petstore \w+: \w+ \S+ a SQLite file only: on PostgreSQL, back up with pg_dump -Fc and restore with pg_restore \(README, "Backups and restores"\)\n$/,
      )
    }
  })
})

describe('backup and restore on a volume that cannot take them', mountingSuiteOptions(), () => {
  test('when the backup volume is full, or read-only, then backup says which directory and why in one line, exit 1, and leaves nothing there', (t) => {
    const cwd = temporaryDirectory(t)
    assert.equal(runCli(['seed', '--count', '20000'], {}, cwd).status, 0)
    const volume = mountTmpfs(t, 1024 * 1024)
    const filler = fillFileSystem(volume)
    const full = runCli(['backup', '--to', join(volume, 'petstore.db')], {}, cwd)
    assert.deepEqual(
      [full.status, full.stderr],
      [1, `petstore backup: ${volume} has no space left for the backup\n`],
    )
    assert.deepEqual(readdirSync(volume), ['filler'], 'nothing left behind')
    rmSync(filler)
    execFileSync('mount', ['-o', 'remount,ro', volume])
    const readOnly = runCli(['backup', '--to', join(volume, 'petstore.db')], {}, cwd)
    assert.deepEqual(
      [readOnly.status, readOnly.stderr],
      [1, `petstore backup: ${volume} is on a read-only file system\n`],
    )
  })

  test("when the database's volume is full, then restore names it in one line, exit 1, and the database is as it was", (t) => {
    const cwd = temporaryDirectory(t)
    assert.equal(runCli(['seed', '--count', '20000'], {}, cwd).status, 0)
    assert.equal(runCli(['backup', '--to', 'saved.db'], {}, cwd).status, 0)
    const volume = mountTmpfs(t, 8 * 1024 * 1024)
    const env = { DATABASE_URL: `sqlite:${join(volume, 'petstore.db')}` }
    assert.equal(runCli(['seed', '--count', '5'], env, cwd).status, 0)
    const filler = fillFileSystem(volume)
    const restore = runCli(['restore', '--from', 'saved.db'], env, cwd)
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

  test('when the volume is nearly full but the restore fails for another reason (the file is not a database), then that reason is said, not the volume', (t) => {
    const cwd = temporaryDirectory(t)
    const volume = mountTmpfs(t, 8 * 1024 * 1024)
    const env = { DATABASE_URL: `sqlite:${join(volume, 'petstore.db')}` }
    assert.equal(runCli(['seed', '--count', '5'], env, cwd).status, 0)
    writeFileSync(join(cwd, 'notes.txt'), 'x'.repeat(300 * 1024))
    const filler = fillFileSystem(volume)
    // Room for the copy, and under 1 MiB left once it is made.
    truncateSync(filler, statSync(filler).size - 900 * 1024)
    const restore = runCli(['restore', '--from', 'notes.txt'], env, cwd)
    assert.deepEqual(
      [restore.status, restore.stderr],
      [1, 'petstore restore: notes.txt is not a SQLite database\n'],
    )
  })

  test('when the database volume is read-only, then restore says so in one line and changes nothing', (t) => {
    const cwd = temporaryDirectory(t)
    assert.equal(runCli(['seed', '--count', '20'], {}, cwd).status, 0)
    assert.equal(runCli(['backup', '--to', 'saved.db'], {}, cwd).status, 0)
    const volume = mountTmpfs(t, 8 * 1024 * 1024)
    const env = { DATABASE_URL: `sqlite:${join(volume, 'petstore.db')}` }
    assert.equal(runCli(['seed', '--count', '5'], env, cwd).status, 0)
    execFileSync('mount', ['-o', 'remount,ro', volume])
    const restore = runCli(['restore', '--from', 'saved.db'], env, cwd)
    assert.deepEqual(
      [restore.status, restore.stderr],
      [1, `petstore restore: ${volume} is on a read-only file system\n`],
    )
    assert.deepEqual(readdirSync(volume), ['petstore.db'])
  })

  test('when the database was left with writes in its write-ahead log (a killed server) and its volume is full, then restore refuses before removing anything, and every one of those writes is still there', (t) => {
    const cwd = temporaryDirectory(t)
    assert.equal(runCli(['seed', '--count', '20'], {}, cwd).status, 0)
    assert.equal(runCli(['backup', '--to', 'saved.db'], {}, cwd).status, 0)
    const volume = mountTmpfs(t, 16 * 1024 * 1024)
    const database = join(volume, 'petstore.db')
    const env = { DATABASE_URL: `sqlite:${database}` }
    assert.equal(runCli(['seed', '--count', '5'], env, cwd).status, 0)
    commitIntoLogThenDie(database, 20_000)
    assert.ok(statSync(`${database}-wal`).size > 0, 'the writes are in the log')
    // Room for the copy of the backup, not for the log's pages folded into the database.
    const filler = fillFileSystem(volume)
    truncateSync(filler, statSync(filler).size - 4 * statSync(join(cwd, 'saved.db')).size)
    const restore = runCli(['restore', '--from', 'saved.db'], env, cwd)
    assert.deepEqual(
      [restore.status, restore.stderr],
      [1, `petstore restore: ${volume} has no space left for the restored database\n`],
    )
    rmSync(filler)
    assert.equal(integrityOf(database), 'ok')
    assert.equal(petCountOf(database), 20_005, 'the logged writes are kept')
  })
})
