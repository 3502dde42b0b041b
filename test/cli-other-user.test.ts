import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { chmodSync, existsSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { temporaryDirectory } from './helpers/cleanup.ts'
import { CLI, cliEnvironment } from './helpers/cli-process.ts'
import { suiteNeeding } from './helpers/suite-requirements.ts'

const RUNUSER = ['/usr/sbin/runuser', '/sbin/runuser'].find((path) => existsSync(path))
// A user other than the one that owns the data: PostgreSQL's, which the machine has for its server.
const OTHER_USER = 'postgres'

function otherUserLack() {
  if (process.getuid?.() !== 0) return { missing: 'not running as root', remedy: 'run the tests as root' }
  if (RUNUSER === undefined || spawnSync('id', ['-u', OTHER_USER]).status !== 0)
    return { missing: `no runuser or no ${OTHER_USER} user`, remedy: 'apt-get install util-linux postgresql' }
  return undefined
}

describe(
  'a command run by a user the data is not open to',
  suiteNeeding('the other-user CLI suite', otherUserLack()),
  () => {
    test('when the database directory is not open to the user running the service, then one line naming it, not a bare EACCES', (t) => {
      const cwd = temporaryDirectory(t)
      chmodSync(cwd, 0o755)
      const data = join(cwd, 'data')
      mkdirSync(data, { mode: 0o700 })
      const result = spawnSync(
        RUNUSER as string,
        [
          '-u',
          OTHER_USER,
          '--',
          'env',
          ...Object.entries(
            cliEnvironment({ PORT: '0', DATABASE_URL: `sqlite:${join(data, 'petstore.db')}` }),
          ).map(([name, value]) => `${name}=${value}`),
          process.execPath,
          CLI,
          'serve',
        ],
        { cwd, encoding: 'utf8', timeout: 30_000 },
      )
      assert.equal(result.status, 1, result.stderr)
      assert.equal(result.stderr.trim().split('\n').length, 1, result.stderr)
      assert.doesNotMatch(result.stderr, /EACCES/)
      assert.match(
        result.stderr,
        new RegExp(`cannot open the database .*\\(${data} is not open to this user\\)`),
      )
    })
  },
)
