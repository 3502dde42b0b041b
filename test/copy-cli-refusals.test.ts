import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, symlinkSync } from 'node:fs'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { describe, test } from 'node:test'
import { runCli } from './helpers/cli-process.ts'
import { temporaryDirectory } from './helpers/test-server.ts'

// `petstore copy` between two SQLite files, as an operator runs it: the stores it refuses. A staging copy
// and a failed or stopped copy have files of their own (copy-cli-*.test.ts), as have the engines' copies
// (copy-*.test.ts).
describe('petstore copy, SQLite to SQLite', () => {
  test('when copy names a SQLite file that is not there, then exit 1 with one line naming it, not a configuration error', async (t) => {
    const cwd = temporaryDirectory(t)
    const result = await runCli(['copy', '--from', 'sqlite:missing.db', '--to', 'sqlite:x.db'], {}, cwd)
    assert.deepEqual(
      [result.status, result.stderr],
      [1, `petstore copy: --from names ${join(cwd, 'missing.db')}, which does not exist\n`],
    )
  })

  test("when --from names a SQLite file with no Pet Store tables (an empty file, another application's database), then exit 1 with one line naming --from and saying so, and no target is left", async (t) => {
    const cwd = temporaryDirectory(t)
    const other = new DatabaseSync(join(cwd, 'other.db'))
    other.exec('CREATE TABLE orders (id INTEGER PRIMARY KEY)')
    other.close()
    execFileSync('touch', [join(cwd, 'empty.db')])
    for (const name of ['empty.db', 'other.db']) {
      const result = await runCli(['copy', '--from', `sqlite:${name}`, '--to', 'sqlite:x.db'], {}, cwd)
      assert.deepEqual(
        [result.status, result.stderr],
        [
          1,
          `petstore copy: --from (the source): no Pet Store tables in ${join(cwd, name)}: name a Pet Store ` +
            'database, or a backup of one\n',
        ],
      )
      assert.equal(existsSync(join(cwd, 'x.db')), false)
    }
  })

  test('when --from or --to names no store a copy can use, then exit 2 naming the option and what is wrong, the value not echoed', async (t) => {
    const cwd = temporaryDirectory(t)
    const other = ['--from', 'sqlite:a.db']
    for (const [store, said] of [
      ['sqlite:', '--to sqlite: names no file: sqlite:PATH'],
      ['sqlite::memory:', '--to names an in-memory store, gone when the copy ends: sqlite:PATH names a file'],
      [
        'sqlite:file:x.db',
        '--to names a SQLite file by a file: URI: name it by its path (./file:… for a file so named)',
      ],
      ['postgres://u:secret@host:port/db', '--to is not a valid postgres:// URL (its host or port?)'],
      [
        'postgres://u:secret@host/db?sslmode=verify_full',
        '--to has sslmode "verify_full", which is none of disable, prefer, require, verify-ca, verify-full, no-verify',
      ],
      [
        'mysql://u:secret@host/db',
        '--to is neither sqlite:PATH nor postgres://user@host:5432/db (password in PGPASSWORD)',
      ],
    ] as const) {
      const result = await runCli(['copy', ...other, '--to', store], {}, cwd)
      assert.deepEqual(
        [result.status, result.stderr],
        [2, `petstore copy: ${said} (see "petstore copy --help")\n`],
        store,
      )
    }
    const result = await runCli(['copy', '--from', 'sqlite:', '--to', 'sqlite:b.db'], {}, cwd)
    assert.equal(
      result.stderr,
      'petstore copy: --from sqlite: names no file: sqlite:PATH (see "petstore copy --help")\n',
    )
  })

  test('when --from or --to names a FIFO, then exit 1 at once with one line saying what it is, nothing read or made', async (t) => {
    const cwd = temporaryDirectory(t)
    assert.equal((await runCli(['seed', '--count', '2'], { DATABASE_URL: 'sqlite:a.db' }, cwd)).status, 0)
    execFileSync('mkfifo', [join(cwd, 'pipe')])
    for (const [from, to, option] of [
      ['sqlite:pipe', 'sqlite:b.db', '--from'],
      ['sqlite:a.db', 'sqlite:pipe', '--to'],
    ] as const) {
      const result = await runCli(['copy', '--from', from, '--to', to], {}, cwd)
      assert.deepEqual(
        [result.status, result.stderr],
        [
          1,
          `petstore copy: ${option} names ${join(cwd, 'pipe')}, which is a FIFO (named pipe): name a database file\n`,
        ],
        option,
      )
    }
    assert.equal(existsSync(join(cwd, 'b.db')), false, 'a target was made')
  })

  test('when copy names one SQLite file twice under two paths, then exit 2 saying so, nothing copied', async (t) => {
    const cwd = temporaryDirectory(t)
    assert.equal((await runCli(['seed', '--count', '2'], { DATABASE_URL: 'sqlite:a.db' }, cwd)).status, 0)
    symlinkSync(join(cwd, 'a.db'), join(cwd, 'link.db'))
    for (const to of ['sqlite:./a.db', `sqlite:${join(cwd, 'a.db')}`, 'sqlite:link.db']) {
      const result = await runCli(['copy', '--from', 'sqlite:a.db', '--to', to], {}, cwd)
      assert.deepEqual(
        [result.status, result.stdout, result.stderr],
        [2, '', 'petstore copy: --from and --to name the same store (see "petstore copy --help")\n'],
        to,
      )
    }
  })

  test('when --to names a symbolic link, or its log or journal is one (planted in a shared directory), then exit 1 naming it, and nothing is written where it points', async (t) => {
    const cwd = temporaryDirectory(t)
    assert.equal((await runCli(['seed', '--count', '3'], { DATABASE_URL: 'sqlite:s.db' }, cwd)).status, 0)
    mkdirSync(join(cwd, 'shared'))
    for (const [link, named] of [
      ['shared/copy.db', 'shared/copy.db'],
      ['shared/other.db-wal', 'shared/other.db'],
      ['shared/third.db-journal', 'shared/third.db'],
    ] as const) {
      symlinkSync(join(cwd, 'planted'), join(cwd, link))
      const result = await runCli(['copy', '--from', 'sqlite:s.db', '--to', `sqlite:${named}`], {}, cwd)
      assert.deepEqual(
        [result.status, result.stderr],
        [1, `petstore copy: ${link} (--to) is a symbolic link: name a file of its own\n`],
        link,
      )
      assert.equal(existsSync(join(cwd, 'planted')), false, `${link}: written through`)
    }
  })
})
