import assert from 'node:assert/strict'
import {
  chmodSync,
  chownSync,
  mkdirSync,
  readdirSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { temporaryDirectory } from './helpers/cleanup.ts'
import { CLI, cliEnvironment, runCli, runCommand } from './helpers/cli-process.ts'
import {
  dataOfOtherUser,
  OTHER_USER,
  otherUserLack,
  runAsOtherUser,
  SETPRIV,
  userIds,
} from './helpers/other-user.ts'
import { suiteNeeding } from './helpers/suite-requirements.ts'

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

    test("when the default data directory cannot be made where the service starts (a directory not its user's to write), then one line naming it and what to do, not a bare EACCES", async (t) => {
      const cwd = temporaryDirectory(t)
      chmodSync(cwd, 0o755)
      const { uid } = userIds(OTHER_USER)
      const result = await runAsOtherUser(['serve'], { PORT: '0' }, cwd)
      assert.deepEqual(
        [result.status, result.stderr],
        [
          1,
          `petstore serve: cannot create ${join(cwd, 'data')} for the database: ${cwd} belongs to 0:0, and ` +
            `this user (uid ${uid}) cannot write it: start it in a directory this user may write, or name ` +
            'another place in DATABASE_URL\n',
        ],
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
