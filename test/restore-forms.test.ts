import assert from 'node:assert/strict'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { temporaryDirectory } from './helpers/cleanup.ts'
import { runCli } from './helpers/cli-process.ts'
import { postgresLack, sharedPostgres } from './helpers/postgres-server.ts'
import { suiteNeeding } from './helpers/suite-requirements.ts'

describe('restore: which of its two forms', () => {
  test('when restore is given both --from and --replacing, or neither, or --replacing where DATABASE_URL is SQLite or is DATABASE_URL itself, then it refuses in one line saying what to give', async (t) => {
    const cwd = temporaryDirectory(t)
    const sqlite = { DATABASE_URL: `sqlite:${join(cwd, 'petstore.db')}` }
    const usage = 'give --from FILE (SQLite) or --replacing URL (PostgreSQL, after pg_restore)'
    for (const args of [[], ['--from', 'b.db', '--replacing', 'postgres://u@h/db']]) {
      const result = await runCli(['restore', ...args], sqlite, cwd)
      assert.deepEqual(
        [result.status, result.stderr],
        [2, `petstore restore: ${usage} (see "petstore restore --help")\n`],
      )
    }
    const onSqlite = await runCli(['restore', '--replacing', 'postgres://u@h/db'], sqlite, cwd)
    assert.equal(onSqlite.status, 1)
    assert.match(onSqlite.stderr, /--replacing is for a PostgreSQL database pg_restore made/)
    const notPostgres = await runCli(['restore', '--replacing', 'sqlite:old.db'], sqlite, cwd)
    assert.equal(notPostgres.status, 2)
    assert.match(notPostgres.stderr, /--replacing names the PostgreSQL database the restored one replaces/)
    // The database pg_restore made named twice: refused before any connection (none listens there).
    const restored = 'postgres://u@127.0.0.1:1/restored'
    const itself = await runCli(['restore', '--replacing', restored], { DATABASE_URL: restored }, cwd)
    assert.equal(itself.status, 2, itself.stderr)
    assert.match(
      itself.stderr,
      /--replacing names DATABASE_URL itself: DATABASE_URL is the new database pg_restore made/,
    )
  })
})

describe(
  'restore --replacing: the database it names',
  suiteNeeding('the PostgreSQL restore suite', postgresLack()),
  () => {
    test('when --replacing names the database pg_restore made in another spelling (postgresql://, a parameter added), then it refuses in one line and changes nothing, rather than carry from that database into itself', async (t) => {
      const cwd = temporaryDirectory(t)
      const restored = await (await sharedPostgres()).createDatabase()
      assert.equal((await runCli(['migrate'], { DATABASE_URL: restored }, cwd)).status, 0)
      const schemeSpelt = restored.replace(/^postgres:/, 'postgresql:')
      for (const replacing of [schemeSpelt, `${restored}?connect_timeout=10`]) {
        assert.notEqual(replacing, restored)
        const carried = await runCli(['restore', '--replacing', replacing], { DATABASE_URL: restored }, cwd)
        assert.deepEqual([carried.status, carried.stdout], [1, ''], carried.stderr)
        assert.match(
          carried.stderr,
          /^petstore restore: --replacing names the database DATABASE_URL names \(spelt another way\): name the database the restored one replaces: nothing was changed\n$/,
        )
      }
    })
  },
)
