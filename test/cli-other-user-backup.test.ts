import assert from 'node:assert/strict'
import {
  chmodSync,
  chownSync,
  copyFileSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  writeFileSync,
} from 'node:fs'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { temporaryDirectory } from './helpers/cleanup.ts'
import { runCli } from './helpers/cli-process.ts'
import { dataOfOtherUser, OTHER_USER, otherUserLack, runAsOtherUser, userIds } from './helpers/other-user.ts'
import { suiteNeeding } from './helpers/suite-requirements.ts'

describe(
  'a backup or restore run by a user the data is not open to',
  suiteNeeding('the other-user CLI suite', otherUserLack()),
  () => {
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
  },
)
