import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import {
  chmodSync,
  chownSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { join } from 'node:path'
import { describe, type TestContext, test } from 'node:test'
import { temporaryDirectory } from './helpers/cleanup.ts'
import { CLI, cliEnvironment, runCli, runCommand } from './helpers/cli-process.ts'
import { suiteNeeding } from './helpers/suite-requirements.ts'

const RUNUSER = ['/usr/sbin/runuser', '/sbin/runuser'].find((path) => existsSync(path))
const SETPRIV = ['/usr/bin/setpriv', '/bin/setpriv'].find((path) => existsSync(path))
// A user other than the one that owns the data: PostgreSQL's, which the machine has for its server.
const OTHER_USER = 'postgres'

/** Runs the CLI as OTHER_USER, in `cwd`, with `env`. */
function runAsOtherUser(args: string[], env: Record<string, string>, cwd: string) {
  const environment = Object.entries(cliEnvironment(env)).map(([name, value]) => `${name}=${value}`)
  return runCommand(
    RUNUSER as string,
    ['-u', OTHER_USER, '--', 'env', ...environment, process.execPath, CLI, ...args],
    { cwd },
    { timeoutMs: 30_000 },
  )
}

function otherUserLack() {
  if (process.getuid?.() !== 0) return { missing: 'not running as root', remedy: 'run the tests as root' }
  if (RUNUSER === undefined || SETPRIV === undefined || spawnSync('id', ['-u', OTHER_USER]).status !== 0)
    return {
      missing: `no runuser, no setpriv or no ${OTHER_USER} user`,
      remedy: 'apt-get install util-linux postgresql',
    }
  return undefined
}

describe(
  'a command run by a user the data is not open to',
  suiteNeeding('the other-user CLI suite', otherUserLack()),
  () => {
    test('when the database directory is not open to the user running the service, then one line naming it, not a bare EACCES', async (t) => {
      const cwd = temporaryDirectory(t)
      chmodSync(cwd, 0o755)
      const data = join(cwd, 'data')
      mkdirSync(data, { mode: 0o700 })
      const result = await runAsOtherUser(
        ['serve'],
        { PORT: '0', DATABASE_URL: `sqlite:${join(data, 'petstore.db')}` },
        cwd,
      )
      assert.equal(result.status, 1, result.stderr)
      assert.equal(result.stderr.trim().split('\n').length, 1, result.stderr)
      assert.doesNotMatch(result.stderr, /EACCES/)
      assert.match(
        result.stderr,
        new RegExp(`cannot open the database .*\\(${data} is not open to this user\\)`),
      )
    })

    test("when the database, or its directory, is a link into a directory not open to the user, then it is said to be out of this user's reach, not a link to nothing (one to remove)", async (t) => {
      const cwd = temporaryDirectory(t)
      chmodSync(cwd, 0o755)
      const closed = join(cwd, 'closed')
      mkdirSync(join(closed, 'data'), { recursive: true, mode: 0o700 })
      chmodSync(closed, 0o700)
      mkdirSync(join(cwd, 'a'))
      chmodSync(join(cwd, 'a'), 0o777)
      symlinkSync(join(closed, 'petstore.db'), join(cwd, 'a', 'petstore.db'))
      symlinkSync(join(closed, 'data'), join(cwd, 'b'))
      for (const database of ['a/petstore.db', 'b/petstore.db']) {
        const result = await runAsOtherUser(['keys', 'list'], { DATABASE_URL: `sqlite:${database}` }, cwd)
        assert.equal(result.status, 1, result.stderr)
        assert.doesNotMatch(result.stderr, /link to nothing|remove it/, database)
        assert.match(
          result.stderr,
          /(cannot be reached by|is not open to) this user \(uid \d+\): run the command as the user the service runs as, or as root\)?\n$/,
        )
      }
    })

    test("when root is kept out of the database (NFS root_squash, a capability dropped), then it is told to run as the service's user, not as root", async (t) => {
      const cwd = temporaryDirectory(t)
      chmodSync(cwd, 0o755)
      const closed = join(cwd, 'closed')
      mkdirSync(join(closed, 'data'), { recursive: true })
      const { uid, gid } = userIds(OTHER_USER)
      chownSync(closed, uid, gid)
      chmodSync(closed, 0o700)
      symlinkSync(join(closed, 'data', 'petstore.db'), join(cwd, 'link.db'))
      for (const database of [join(closed, 'data', 'petstore.db'), 'link.db']) {
        // Root without the capabilities that pass file permissions, as an NFS server's root_squash makes it.
        const result = await runCommand(
          SETPRIV as string,
          ['--bounding-set=-dac_override,-dac_read_search', process.execPath, CLI, 'keys', 'list'],
          { cwd, env: cliEnvironment({ DATABASE_URL: `sqlite:${database}` }) },
          { timeoutMs: 30_000 },
        )
        assert.equal(result.status, 1, result.stderr)
        assert.match(
          result.stderr,
          /(cannot be reached by|is not open to) this user \(uid 0\): run the command as the user the service runs as\)?\n$/,
          database,
        )
      }
    })

    test('when a backup is written into a directory not open to the user running it, then one line naming the directory, not a bare EACCES', async (t) => {
      const cwd = temporaryDirectory(t)
      chmodSync(cwd, 0o755)
      assert.equal((await runCli(['seed', '--count', '3'], {}, cwd)).status, 0)
      const { uid, gid } = userIds(OTHER_USER)
      for (const file of ['data', ...readdirSync(join(cwd, 'data')).map((name) => join('data', name))])
        chownSync(join(cwd, file), uid, gid)
      // As a container's host directory owned by root is to the image's user.
      const backups = join(cwd, 'backups')
      mkdirSync(backups, { mode: 0o755 })
      const result = await runAsOtherUser(['backup', '--to', join(backups, 'petstore-1.db')], {}, cwd)
      assert.deepEqual(
        [result.status, result.stderr],
        [
          1,
          `petstore backup: ${backups} is not open to this user (uid ${uid}): give it this user, or back up into another directory\n`,
        ],
      )
      assert.deepEqual(readdirSync(backups), [])
    })

    test("when backup --force names another user's file in a sticky directory (/tmp, a shared backups directory), then it refuses before copying, in one line naming the file, its owner and what to do; its own file, or one in its own directory, is replaced, and root replaces any", async (t) => {
      const { cwd, uid } = dataOfOtherUser(t)
      assert.equal((await runAsOtherUser(['seed', '--count', '3'], {}, cwd)).status, 0)
      const shared = join(cwd, 'shared')
      mkdirSync(shared)
      chmodSync(shared, 0o1777)
      const roots = join(shared, 'root.db')
      writeFileSync(roots, 'kept')
      const refused = await runAsOtherUser(['backup', '--to', roots, '--force'], {}, cwd)
      assert.deepEqual(
        [refused.status, refused.stderr],
        [
          1,
          `petstore backup: ${roots} belongs to 0:0, and in ${shared} (a sticky directory) only its ` +
            `owner or the directory's may replace it, not this user (uid ${uid}): name another file, or ` +
            'have its owner remove it\n',
        ],
      )
      assert.deepEqual([readFileSync(roots, 'utf8'), readdirSync(shared)], ['kept', ['root.db']])
      const mine = join(shared, 'mine.db')
      writeFileSync(mine, '')
      chownSync(mine, uid, uid)
      const own = join(cwd, 'own')
      mkdirSync(own)
      chmodSync(own, 0o1777)
      chownSync(own, uid, uid)
      writeFileSync(join(own, 'root.db'), 'kept')
      for (const to of [mine, join(own, 'root.db')]) {
        const replaced = await runAsOtherUser(['backup', '--to', to, '--force'], {}, cwd)
        assert.equal(replaced.status, 0, `${to}: ${replaced.stderr}`)
      }
      const asRoot = await runCli(['backup', '--to', roots, '--force'], {}, cwd)
      assert.equal(asRoot.status, 0, asRoot.stderr)
    })

    test("when restore runs as the database's owner in a directory not open to it (root's, 0755), then one line naming the directory and what to do, not a bare EACCES on a hidden copy, and the database is unchanged", async (t) => {
      const cwd = temporaryDirectory(t)
      chmodSync(cwd, 0o755)
      assert.equal((await runCli(['seed', '--count', '3'], {}, cwd)).status, 0)
      assert.equal((await runCli(['backup', '--to', 'b.db'], {}, cwd)).status, 0)
      chmodSync(join(cwd, 'b.db'), 0o644)
      const { uid, gid } = userIds(OTHER_USER)
      const rd = join(cwd, 'rd')
      mkdirSync(rd)
      chmodSync(rd, 0o755)
      const database = join(rd, 'petstore.db')
      copyFileSync(join(cwd, 'b.db'), database)
      chownSync(database, uid, gid)
      chmodSync(database, 0o600)
      const before = readFileSync(database)
      const restore = () =>
        runAsOtherUser(['restore', '--from', 'b.db'], { DATABASE_URL: `sqlite:${database}` }, cwd)
      const result = await restore()
      assert.deepEqual(
        [result.status, result.stderr],
        [
          1,
          `petstore restore: ${rd} is not open to this user (uid ${uid}): give it this user, or restore ` +
            'as root\n',
        ],
      )
      // A backup this user may not read is said of the backup, not put down to the directory.
      chmodSync(join(cwd, 'b.db'), 0o600)
      const unread = await restore()
      assert.deepEqual(
        [unread.status, unread.stderr],
        [
          1,
          `petstore restore: b.db cannot be read by this user (uid ${uid}): restore as root, or as its ` +
            'owner\n',
        ],
      )
      assert.deepEqual(readdirSync(rd), ['petstore.db'])
      assert.ok(readFileSync(database).equals(before), 'the database unchanged')
    })

    test("when .env cannot be read by the user running a command (root's, 0600; its own, mode 0200), then exit 78 with one line naming it and what to do, not a bare EACCES", async (t) => {
      const cwd = temporaryDirectory(t)
      chmodSync(cwd, 0o755)
      const env = join(cwd, '.env')
      writeFileSync(env, 'LOG_LEVEL=info\n', { mode: 0o600 })
      const { uid, gid } = userIds(OTHER_USER)
      const refused = async () => {
        const result = await runAsOtherUser(['keys', 'list'], {}, cwd)
        return [result.status, result.stderr]
      }
      const line = (why: string) => `petstore: invalid configuration: .env ${why}\n`
      assert.deepEqual(await refused(), [
        78,
        line(
          `belongs to 0:0, and this user (uid ${uid}) cannot read it: run the command as the user the ` +
            'service runs as, or chown it to that user',
        ),
      ])
      chownSync(env, uid, gid)
      chmodSync(env, 0o200)
      assert.deepEqual(await refused(), [
        78,
        line("is this user's, and its mode 0200 keeps this user from reading it: chmod u+r it"),
      ])
      assert.deepEqual(readdirSync(cwd), ['.env'], 'no database was made')
    })

    test("when root runs a command that makes the database in the service user's directory, then the files are that user's, and it opens them", async (t) => {
      const { cwd, data, uid, gid } = dataOfOtherUser(t)
      const env = { DATABASE_URL: `sqlite:${join(data, 'petstore.db')}` }
      // As the README's "Back to SQLite" and `keys create` are run with sudo.
      const made = await runCli(['keys', 'create', '--name', 'web'], env, cwd)
      assert.equal(made.status, 0, made.stderr)
      for (const name of readdirSync(data)) {
        const stats = statSync(join(data, name))
        assert.deepEqual([name, stats.uid, stats.gid], [name, uid, gid])
      }
      const listed = await runAsOtherUser(['keys', 'list'], env, cwd)
      assert.equal(listed.status, 0, listed.stderr)
      assert.match(listed.stdout, /\bweb\b/)
    })

    test('when the database file belongs to another user, then one line naming its owner, not a bare "unable to open"', async (t) => {
      const { cwd, data, uid } = dataOfOtherUser(t)
      const database = join(data, 'petstore.db')
      writeFileSync(database, '', { mode: 0o600 })
      const result = await runAsOtherUser(['keys', 'list'], { DATABASE_URL: `sqlite:${database}` }, cwd)
      assert.equal(result.status, 1, result.stderr)
      assert.equal(result.stderr.trim().split('\n').length, 1, result.stderr)
      assert.match(
        result.stderr,
        new RegExp(
          `\\(${database} belongs to 0:0, and this user \\(uid ${uid}\\) cannot write it: chown it to`,
        ),
      )
    })

    for (const args of [['serve'], ['keys', 'create', '--name', 'web']]) {
      test(`when the database file belongs to another user who lets others read it, then "${args.join(' ')}" refuses with one line naming its owner, not a read-only disk, and leaves no files beside it`, async (t) => {
        const { cwd, data, uid } = dataOfOtherUser(t)
        const database = join(data, 'petstore.db')
        assert.equal((await runCli(['migrate'], { DATABASE_URL: `sqlite:${database}` }, cwd)).status, 0)
        for (const name of readdirSync(data)) if (name !== 'petstore.db') rmSync(join(data, name))
        chownSync(database, 0, 0)
        chmodSync(database, 0o644)
        const result = await runAsOtherUser([...args], { PORT: '0', DATABASE_URL: `sqlite:${database}` }, cwd)
        assert.equal(result.status, 1, result.stderr)
        assert.equal(result.stderr.trim().split('\n').length, 1, result.stderr)
        assert.doesNotMatch(result.stderr, /read-only/)
        assert.match(
          result.stderr,
          new RegExp(
            `\\(${database} belongs to 0:0, and this user \\(uid ${uid}\\) cannot write it: chown it to`,
          ),
        )
        assert.deepEqual(readdirSync(data), ['petstore.db'], 'no -wal or -shm of the other user beside it')
      })
    }

    test("when the database file is the user's own but its mode keeps it from writing, then serve refuses with one line saying so, not a read-only disk", async (t) => {
      const { cwd, data, uid, gid } = dataOfOtherUser(t)
      const database = join(data, 'petstore.db')
      assert.equal((await runCli(['migrate'], { DATABASE_URL: `sqlite:${database}` }, cwd)).status, 0)
      for (const name of readdirSync(data)) if (name !== 'petstore.db') rmSync(join(data, name))
      chownSync(database, uid, gid)
      chmodSync(database, 0o444)
      const result = await runAsOtherUser(['serve'], { PORT: '0', DATABASE_URL: `sqlite:${database}` }, cwd)
      assert.deepEqual(
        [result.status, result.stderr],
        [
          1,
          `petstore serve: cannot open the database ${database}: permission denied (${database} is this user's, and its mode 0444 keeps this user from writing it: chmod u+rw it)\n`,
        ],
      )
    })
  },
)

function userIds(name: string): { uid: number; gid: number } {
  const id = (flag: string) => Number(spawnSync('id', [flag, name], { encoding: 'utf8' }).stdout.trim())
  return { uid: id('-u'), gid: id('-g') }
}

/** A directory any user may enter, holding `data/` (mode 0700), OTHER_USER's, as a service's state directory is. */
function dataOfOtherUser(t: TestContext) {
  const cwd = temporaryDirectory(t)
  chmodSync(cwd, 0o755)
  const { uid, gid } = userIds(OTHER_USER)
  const data = join(cwd, 'data')
  mkdirSync(data, { mode: 0o700 })
  chownSync(data, uid, gid)
  return { cwd, data, uid, gid }
}
