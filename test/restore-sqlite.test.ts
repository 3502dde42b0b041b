import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import {
  chmodSync,
  chownSync,
  closeSync,
  linkSync,
  mkdirSync,
  openSync,
  readdirSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
  writeSync,
} from 'node:fs'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { generateApiKey } from '../src/auth/api-key.ts'
import { CLI, cliEnvironment, runCli } from './helpers/cli-process.ts'
import {
  backedUpForAnotherUser,
  commitIntoLogThenDie,
  integrityOf,
  petCountOf,
  rootLack,
} from './helpers/sqlite-backup-fixtures.ts'
import { readOnly } from './helpers/sqlite-file.ts'
import { suiteNeeding } from './helpers/suite-requirements.ts'
import { temporaryDirectory } from './helpers/test-server.ts'

describe('restore over a database (SQLite)', () => {
  test('when a backup older than the database is restored, then revocations made since stay, no pet id given out since is given again, the database replaced is kept aside, and the line says so', async (t) => {
    const cwd = temporaryDirectory(t)
    const key = async (name: string) => {
      const made = await runCli(['keys', 'create', '--name', name], {}, cwd)
      assert.equal(made.status, 0, made.stderr)
      return made.stdout.trim()
    }
    await key('kept')
    await key('leaked')
    assert.equal((await runCli(['seed', '--count', '3'], {}, cwd)).status, 0)
    assert.equal((await runCli(['backup', '--to', 'b.db'], {}, cwd)).status, 0)
    // Since the backup: a key revoked (leaked), pets 4 to 8 handed out, a key made.
    assert.equal((await runCli(['keys', 'revoke', 'leaked'], {}, cwd)).status, 0)
    assert.equal((await runCli(['seed', '--count', '5'], {}, cwd)).status, 0)
    await key('newer')
    const database = join(cwd, 'data', 'petstore.db')
    const itself = await runCli(['restore', '--from', database], {}, cwd)
    assert.equal(itself.status, 1)
    assert.match(itself.stderr, /^petstore restore: .* is the database being restored/)

    const restored = await runCli(['restore', '--from', 'b.db'], {}, cwd)
    assert.equal(restored.status, 0, restored.stderr)
    const said =
      /^restored 3 pets from \/\S+\/b\.db into (\/.+); the database it replaced \(8 pets\) is kept at (\/.+): delete it once this one is checked; 1 revocation made since the backup kept; pet ids it gave out \(up to 8\) not given again; 1 key made since the backup is not in it: newer\n$/.exec(
        restored.stdout,
      )
    assert.ok(said, restored.stdout)
    const aside = said[2] as string
    assert.equal(statSync(aside).mode & 0o777, 0o600)
    assert.equal(petCountOf(aside), 8, 'the replaced database, whole')
    assert.equal(integrityOf(aside), 'ok')

    const keys = JSON.parse((await runCli(['keys', 'list', '--json'], {}, cwd)).stdout) as Array<{
      name: string
      revokedAt?: string | null
    }>
    const leaked = keys.find((listed) => listed.name === 'leaked')
    assert.ok(leaked?.revokedAt, 'a revocation is never undone by a restore')
    assert.equal(
      keys.some((listed) => listed.name === 'newer'),
      false,
    )
    assert.equal((await runCli(['seed', '--count', '1'], {}, cwd)).status, 0)
    assert.equal(
      readOnly(database, (db) => db.prepare('SELECT max(id) AS n FROM pets').get()?.n),
      9,
      'ids 4 to 8 are not given again',
    )
  })

  test('when the database replaced is damaged past its first pages, or a restore cut short left a second name of it, then the restore goes through and says what it could not keep', async (t) => {
    const cwd = temporaryDirectory(t)
    assert.equal((await runCli(['seed', '--count', '5'], {}, cwd)).status, 0)
    assert.equal((await runCli(['backup', '--to', 'b.db'], {}, cwd)).status, 0)
    assert.equal((await runCli(['seed', '--count', '2000'], {}, cwd)).status, 0)
    const database = join(cwd, 'data', 'petstore.db')
    // A crash between the second name and the rename: the live file under a `.replacing-` name.
    linkSync(database, `${database}.replacing-2026-01-01T00-00-00-000Z`)
    const fd = openSync(database, 'r+')
    writeSync(fd, Buffer.alloc(4096, 9), 0, 4096, 4096 * 3)
    closeSync(fd)

    const restored = await runCli(['restore', '--from', 'b.db'], {}, cwd)
    assert.equal(restored.status, 0, restored.stderr)
    assert.match(
      restored.stdout,
      /^restored 5 pets from \/\S+\/b\.db into .*; the database it replaced .*is kept at \S+: delete it once this one is checked; it could not all be read \(database disk image is malformed\): /,
    )
    assert.deepEqual(
      readdirSync(join(cwd, 'data')).filter((name) => name.includes('.replac')).length,
      1,
      'the leftover second name of the live file is gone; the replaced database is kept once',
    )
    assert.equal(integrityOf(database), 'ok')
    assert.equal(petCountOf(database), 5)
  })

  test('when the file to restore has writes in a write-ahead log beside it (the data of a killed server), then restore refuses, naming the log and what to do, and the database is unchanged; its backup restores every write', async (t) => {
    const cwd = temporaryDirectory(t)
    assert.equal((await runCli(['seed', '--count', '5'], {}, cwd)).status, 0)
    mkdirSync(join(cwd, 'crashed'))
    const crashed = join(cwd, 'crashed', 'petstore.db')
    assert.equal(
      (await runCli(['seed', '--count', '10'], { DATABASE_URL: `sqlite:${crashed}` }, cwd)).status,
      0,
    )
    commitIntoLogThenDie(crashed, 20)
    const log = `${crashed}-wal`
    assert.ok(statSync(log).size > 0, 'the writes are in the log')

    const restore = await runCli(['restore', '--from', crashed], {}, cwd)
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
    const linked = await runCli(['restore', '--from', 'latest.db'], {}, cwd)
    assert.equal(linked.status, 1, linked.stdout)
    assert.match(
      linked.stderr,
      /^petstore restore: latest\.db has a write-ahead log beside it that may hold writes \(/,
    )
    assert.equal(petCountOf(join(cwd, 'data/petstore.db')), 5, 'the database is unchanged')

    // The way the message gives: every logged write restored.
    const backup = await runCli(['backup', '--to', 'rescued.db'], { DATABASE_URL: `sqlite:${crashed}` }, cwd)
    assert.equal(backup.status, 0, backup.stderr)
    assert.equal((await runCli(['restore', '--from', 'rescued.db'], {}, cwd)).status, 0)
    assert.equal(petCountOf(join(cwd, 'data/petstore.db')), 30)

    // A journal SQLite keeps between transactions (journal_mode=PERSIST) has its header zeroed: no
    // transaction is in it, and the file is whole.
    writeFileSync(join(cwd, 'rescued.db-journal'), Buffer.alloc(8720))
    assert.equal((await runCli(['restore', '--from', 'rescued.db'], {}, cwd)).status, 0)
  })

  test('when the database is missing but its write-ahead log is there (deleted under a server), then restore refuses as a start does, saying what to do, and changes nothing', async (t) => {
    const cwd = temporaryDirectory(t)
    assert.equal((await runCli(['seed', '--count', '3'], {}, cwd)).status, 0)
    assert.equal((await runCli(['backup', '--to', 'b.db'], {}, cwd)).status, 0)
    const database = join(cwd, 'data', 'petstore.db')
    commitIntoLogThenDie(database, 5)
    rmSync(database)
    const restore = await runCli(['restore', '--from', 'b.db'], {}, cwd)
    assert.deepEqual(
      [restore.status, restore.stderr],
      [
        1,
        `petstore restore: ${database} is missing but its write-ahead log ${database}-wal is there: the database file was deleted or moved while in use. Put it back (the log holds its latest writes), or remove ${database}-wal and ${database}-shm to restore in its place\n`,
      ],
    )
    assert.deepEqual(readdirSync(join(cwd, 'data')).sort(), ['petstore.db-shm', 'petstore.db-wal'])
  })

  test('when DATABASE_URL names a link to nothing (a volume not mounted), then restore refuses, naming it, and makes nothing', async (t) => {
    const cwd = temporaryDirectory(t)
    assert.equal((await runCli(['seed', '--count', '3'], {}, cwd)).status, 0)
    assert.equal((await runCli(['backup', '--to', 'b.db'], {}, cwd)).status, 0)
    mkdirSync(join(cwd, 'linked'))
    const link = join(cwd, 'linked', 'petstore.db')
    symlinkSync('/mnt/not-mounted/petstore.db', link)
    const restore = await runCli(['restore', '--from', 'b.db'], { DATABASE_URL: `sqlite:${link}` }, cwd)
    assert.deepEqual(
      [restore.status, restore.stderr],
      [
        1,
        `petstore restore: ${link} is a link to nothing (/mnt/not-mounted/petstore.db): make what it names, or remove it, then restore\n`,
      ],
    )
    assert.deepEqual(readdirSync(join(cwd, 'linked')), ['petstore.db'])
  })

  test('when a backup or a restore killed mid-way left its hidden copy, then the next one removes it, and keeps one whose process still runs', async (t) => {
    const cwd = temporaryDirectory(t)
    assert.equal((await runCli(['seed', '--count', '5'], {}, cwd)).status, 0)
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

    assert.equal((await runCli(['backup', '--to', 'b.db'], {}, cwd)).status, 0)
    const beside = (directory: string, part: string) =>
      readdirSync(directory).filter((name) => name.includes(part))
    assert.deepEqual(beside(cwd, '.b.db.backup-'), [running], "a running process's copy is left to it")
    assert.deepEqual(beside(cwd, '.petstore-2026-'), [recent])
    assert.equal((await runCli(['restore', '--from', 'b.db'], {}, cwd)).status, 0)
    assert.deepEqual(beside(join(cwd, 'data'), '.restore-'), [])
  })

  test("when a backup is restored, then the database keeps the owner and mode of the file it replaces, not the backup's", async (t) => {
    const cwd = temporaryDirectory(t)
    const env = { API_KEYS: `cli:${generateApiKey()}` }
    assert.equal((await runCli(['seed', '--count', '3'], env, cwd)).status, 0)
    assert.equal((await runCli(['backup', '--to', 'b.db'], env, cwd)).status, 0)
    const database = join(cwd, 'data', 'petstore.db')
    // The service's own user (systemd's DynamicUser, a container's), where the backup is root's (cron).
    const asRoot = process.getuid?.() === 0
    if (asRoot) chownSync(database, 65534, 65534)
    chmodSync(database, 0o600)
    chmodSync(join(cwd, 'b.db'), 0o644)
    const restored = await runCli(['restore', '--from', 'b.db'], env, cwd)
    assert.equal(restored.status, 0, restored.stderr)
    const after = statSync(database)
    assert.equal(after.mode & 0o777, 0o600)
    if (asRoot) assert.deepEqual([after.uid, after.gid], [65534, 65534])
    else t.diagnostic('not root: the owner kept is not checked, only the mode')

    // A first restore, where no database is yet: its directory's owner, and only its owner may read it.
    const fresh = temporaryDirectory(t)
    mkdirSync(join(fresh, 'data'))
    if (asRoot) chownSync(join(fresh, 'data'), 65534, 65534)
    const first = await runCli(['restore', '--from', join(cwd, 'b.db')], env, fresh)
    assert.equal(first.status, 0, first.stderr)
    const made = statSync(join(fresh, 'data', 'petstore.db'))
    assert.equal(made.mode & 0o777, 0o600)
    if (asRoot) assert.deepEqual([made.uid, made.gid], [65534, 65534])
  })

  test("when a user the database's directory is closed to runs backup, restore or keys list, then each says the directory is not open to that user, not that there is no database", {
    ...suiteNeeding('the commands as another user', rootLack()),
  }, async (t) => {
    const cwd = await backedUpForAnotherUser(t, 0o777)
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
  }, async (t) => {
    const cwd = await backedUpForAnotherUser(t, 0o755)
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
})
