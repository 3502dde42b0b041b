import assert from 'node:assert/strict'
import { mkdirSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { temporaryDirectory } from './helpers/cleanup.ts'
import { runCli } from './helpers/cli-process.ts'

// The start and the commands that open the database as it does (backup, restore and copy check their
// paths themselves): a slip in the path said as they say it, not as SQLite's bare "unable to open".
const RUNS = [['serve'], ['migrate'], ['keys', 'create', '--name', 'x'], ['seed', '--count', '1']]

/** Each of RUNS exits 1 with `line` alone: serve before it listens (it would run until runCli kills it). */
async function assertEachRefuses(cwd: string, env: Record<string, string>, line: string): Promise<void> {
  for (const args of RUNS) {
    const result = await runCli(args, { PORT: '0', ...env }, cwd)
    assert.deepEqual(
      [result.status, result.stdout, result.stderr],
      [1, '', line.replace('petstore NAME', `petstore ${args[0]}`)],
      args.join(' '),
    )
  }
}

describe('SQLite: a database path that names no file the service can open', () => {
  test('when DATABASE_URL names a directory, then serve and each command exit 1 with one line naming it', async (t) => {
    const cwd = temporaryDirectory(t)
    mkdirSync(join(cwd, 'data'))
    await assertEachRefuses(
      cwd,
      { DATABASE_URL: 'sqlite:data' },
      'petstore NAME: cannot open the database data: unable to open database file (data is a directory: ' +
        'DATABASE_URL must name a database file)\n',
    )
    assert.deepEqual(readdirSync(join(cwd, 'data')), [], 'nothing made in it')
  })

  test('when the database file is a link to nothing (a volume not mounted), then serve and each command exit 1 with one line naming the link and what it names, and make nothing', async (t) => {
    const cwd = temporaryDirectory(t)
    mkdirSync(join(cwd, 'data'))
    const target = join(cwd, 'notmounted', 'petstore.db')
    symlinkSync(target, join(cwd, 'data', 'petstore.db'))
    await assertEachRefuses(
      cwd,
      {},
      'petstore NAME: cannot open the database data/petstore.db: unable to open database file ' +
        `(data/petstore.db is a link to nothing (${target}): make what it names, or remove it)\n`,
    )
    assert.deepEqual([readdirSync(cwd), readdirSync(join(cwd, 'data'))], [['data'], ['petstore.db']])
  })

  test('when the data directory is a link to nothing, then serve and each command exit 1 with one line naming it and what it names, not a bare EEXIST', async (t) => {
    const cwd = temporaryDirectory(t)
    const target = join(cwd, 'notmounted')
    symlinkSync(target, join(cwd, 'data'))
    const line = (data: string) =>
      `petstore NAME: cannot open the database ${join(data, 'petstore.db')}: ` +
      `${data} is a link to nothing (${target}): make what it names, or remove it\n`
    await assertEachRefuses(cwd, {}, line('data'))
    // Named by a DATABASE_URL of its own, it is not made: said alike, not "a directory that does not exist".
    const data = join(cwd, 'data')
    await assertEachRefuses(cwd, { DATABASE_URL: `sqlite:${join(data, 'petstore.db')}` }, line(data))
    assert.deepEqual(readdirSync(cwd), ['data'])
  })

  test('when the data directory is a regular file, then serve and each command exit 1 with one line naming it', async (t) => {
    const cwd = temporaryDirectory(t)
    writeFileSync(join(cwd, 'data'), '')
    await assertEachRefuses(
      cwd,
      {},
      'petstore NAME: cannot open the database data/petstore.db: unable to open database file ' +
        '(data is a regular file, not a directory: move it away, or correct the path)\n',
    )
  })

  // Exit 1, not a setting refused's 78: a volume mounted after the start is there at a restart's.
  test("when DATABASE_URL's directory does not exist, then serve and each command exit 1 with one line naming it, and make nothing", async (t) => {
    const cwd = temporaryDirectory(t)
    await assertEachRefuses(
      cwd,
      { DATABASE_URL: 'sqlite:missing/petstore.db' },
      `petstore NAME: DATABASE_URL names a file in ${join(cwd, 'missing')}, a directory that does not ` +
        'exist (create it first, mount its volume, or correct the path)\n',
    )
    assert.deepEqual(readdirSync(cwd), [])
  })
})

describe('SQLite: backup, restore and copy given a path through a file or a link to nothing', () => {
  test('when the data directory is a regular file or a link to nothing, then restore exits 1 with one line naming it and what to do, and makes nothing', async (t) => {
    const cwd = temporaryDirectory(t)
    assert.equal((await runCli(['seed', '--count', '3'], { DATABASE_URL: 'sqlite:s.db' }, cwd)).status, 0)
    assert.equal((await runCli(['backup', '--to', 'b.db'], { DATABASE_URL: 'sqlite:s.db' }, cwd)).status, 0)
    const data = join(cwd, 'data')
    writeFileSync(data, '')
    const target = join(cwd, 'notmounted')
    for (const [make, line] of [
      [() => {}, 'data is a regular file, not a directory: move it away, or correct the path'],
      [
        () => {
          rmSync(data)
          symlinkSync(target, data)
        },
        `data is a link to nothing (${target}): make what it names, or remove it`,
      ],
    ] as const) {
      make()
      const restore = await runCli(['restore', '--from', 'b.db'], {}, cwd)
      assert.deepEqual([restore.status, restore.stderr], [1, `petstore restore: ${line}\n`])
      assert.deepEqual(readdirSync(cwd).sort(), ['b.db', 'data', 's.db'], 'nothing made')
    }
  })

  test('when backup --to or copy --to names a file through a regular file or a link to nothing, then exit 1 with one line naming it and what to do, and nothing is made', async (t) => {
    const cwd = temporaryDirectory(t)
    assert.equal((await runCli(['seed', '--count', '3'], {}, cwd)).status, 0)
    writeFileSync(join(cwd, 'one.db'), '')
    const target = join(cwd, 'notmounted')
    symlinkSync(target, join(cwd, 'gone'))
    const file = 'one.db is a regular file, not a directory: move it away, or correct the path'
    const link = `gone is a link to nothing (${target}): make what it names, or remove it`
    for (const [args, line] of [
      [['backup', '--to', 'one.db/x.db'], `petstore backup: ${file}`],
      [['backup', '--to', 'gone/x.db'], `petstore backup: ${link}`],
      [
        ['copy', '--from', 'sqlite:data/petstore.db', '--to', 'sqlite:one.db/x.db'],
        `petstore copy: --to (the target): ${file}`,
      ],
      [
        ['copy', '--from', 'sqlite:data/petstore.db', '--to', 'sqlite:gone/x.db'],
        `petstore copy: --to (the target): ${link}`,
      ],
    ] as const) {
      const result = await runCli([...args], {}, cwd)
      assert.deepEqual([result.status, result.stderr], [1, `${line}\n`], args.join(' '))
    }
    assert.deepEqual(readdirSync(cwd).sort(), ['data', 'gone', 'one.db'], 'nothing made')
    assert.deepEqual(readdirSync(join(cwd, 'data')), ['petstore.db'], 'no hidden copy left')
  })
})
