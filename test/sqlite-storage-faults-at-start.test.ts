import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { readdirSync, readFileSync, statSync, truncateSync, unlinkSync } from 'node:fs'
import { join } from 'node:path'
import { describe, type TestContext, test } from 'node:test'
import { generateApiKey } from '../src/auth/api-key.ts'
import { temporaryDirectory } from './helpers/cleanup.ts'
import { exitWithin, runCli, serveForTest } from './helpers/cli-process.ts'
import { MIB, setUp } from './helpers/faulty-volume-server.ts'
import { rowCount } from './helpers/sqlite-file.ts'
import { fillFileSystem, mountingSuiteOptions, mountTmpfs } from './helpers/storage-faults.ts'

// Storage faults met as a start or a command opens the database; those under a running server are in
// sqlite-storage-faults.test.ts.

/**
 * A volume of 8 MiB whose service created five pets and stopped cleanly; `fault` then spoils it, a start
 * must refuse with `refusal`, `mend` puts it right, and the next start serves every pet.
 */
async function startRefusedThenMended(
  t: TestContext,
  { fault, refusal, mend }: { fault: (directory: string) => void; refusal: RegExp; mend: () => void },
): Promise<void> {
  const directory = mountTmpfs(t, 8 * MIB)
  const setup = setUp(t, directory)
  const server = await setup.start()
  await setup.ledger.createAcknowledged(server, 5)
  server.child.kill('SIGTERM')
  assert.equal(await exitWithin(server), 0)
  fault(directory)
  const output = await setup.start().then(
    () => assert.fail('the service started'),
    (error: Error) => error.message.split('\n').slice(1).join('\n').trim(),
  )
  assert.equal(output.split('\n').length, 1, `one line: ${output}`)
  assert.match(output, refusal)
  mend()
  await setup.ledger.assertAllPresent(await setup.start())
}

describe('SQLite: a read-only volume at start', mountingSuiteOptions(), () => {
  test('when the volume is read-only as the service starts, then it refuses with one line naming why; remounted read-write, it starts with every pet', async (t) => {
    let volume = ''
    await startRefusedThenMended(t, {
      // Linux refuses this while a process has files open for writing on the volume (EBUSY): a running
      // server's volume turns read-only only by the kernel's own doing, as in the next suite.
      fault: (directory) => {
        volume = directory
        execFileSync('mount', ['-o', 'remount,ro', directory])
      },
      refusal: /cannot open the database .* is on a read-only file system/,
      mend: () => execFileSync('mount', ['-o', 'remount,rw', volume]),
    })
  })
})

describe('SQLite: a full disk at start', mountingSuiteOptions(), () => {
  test('when the disk holding the database is full as the service starts, then it refuses with one line saying so; given room, it starts with every pet', async (t) => {
    let filler = ''
    await startRefusedThenMended(t, {
      fault: (directory) => {
        filler = fillFileSystem(directory)
      },
      refusal: /cannot open the database .*: .* \(the disk holding .* is full\)/,
      mend: () => unlinkSync(filler),
    })
  })
})

describe('SQLite: a full disk when a start or a command writes', mountingSuiteOptions(), () => {
  test('when the disk fills up before a start stores its keys or seed adds pets, then each refuses in one line saying what to do, with no storage-fault log line, and exits 1', async (t) => {
    const directory = mountTmpfs(t, 8 * MIB)
    const setup = setUp(t, directory)
    // A running server keeps the database's -wal and -shm files: opening it again takes no space, a
    // write does.
    await setup.ledger.createAcknowledged(await setup.start(), 5)
    fillFileSystem(directory)
    const database = { DATABASE_URL: `sqlite:${join(directory, 'petstore.db')}` }
    const serve = { ...database, API_KEYS: `another:${generateApiKey()}`, HOST: '127.0.0.1', PORT: '0' }
    const runs = [
      { args: ['serve'], env: { ...serve, METRICS_PORT: '0', LOG_LEVEL: 'info' } },
      { args: ['seed', '--count', '10'], env: database },
    ]
    for (const { args, env } of runs) {
      const { status, stdout, stderr } = await runCli(args, env, temporaryDirectory(t))
      assert.equal(status, 1, `${args[0]}: ${stderr}`)
      assert.match(
        stderr,
        new RegExp(
          `^petstore ${args[0]}: the disk holding the database is full: .*; free space on its volume, then run it again\\n$`,
        ),
      )
      assert.doesNotMatch(
        stdout + stderr,
        /storageFault|resumes by itself/,
        `${args[0]}: no serving process's fault line`,
      )
    }
  })

  test('when the disk fills up part way through a seed, then its one line says how many pets it added, as many as the database then holds, and how many add the rest, and it exits 1', async (t) => {
    const directory = mountTmpfs(t, 8 * MIB)
    const setup = setUp(t, directory)
    // A running server keeps the database's -wal and -shm files: opening it again takes no space, a
    // write does.
    await setup.ledger.createAcknowledged(await setup.start(), 5)
    const filler = fillFileSystem(directory)
    // Room for some batches of the seed, far from all of 100000 pets.
    truncateSync(filler, statSync(filler).size - MIB)
    const path = join(directory, 'petstore.db')
    const { status, stdout, stderr } = await runCli(
      ['seed', '--count', '100000'],
      { DATABASE_URL: `sqlite:${path}` },
      temporaryDirectory(t),
    )
    const added = rowCount(path, 'pets') - 5
    assert.ok(added > 0 && added < 100000, `${added} pets added before the disk was full`)
    assert.deepEqual(
      [status, stdout, stderr],
      [
        1,
        '',
        `petstore seed: added ${added} of 100000 pets before: the disk holding the database is full: ` +
          'database or disk is full; free space on its volume, then run it again ' +
          `(--count ${100000 - added} adds the rest)\n`,
      ],
    )
  })
})

describe('SQLite: no file left for the first API key', mountingSuiteOptions(), () => {
  test('when a first start cannot make the file its API key is handed over in (the volume out of inodes), then one line naming the file and what to do, and no key is stored; given room, the next start makes one', async (t) => {
    // Its root, data/, and the database's three files: no sixth.
    const cwd = mountTmpfs(t, 8 * MIB, 5)
    const started = await runCli(['serve'], { PORT: '0', METRICS: 'off' }, cwd)
    assert.deepEqual(
      [started.status, started.stderr],
      [
        1,
        'petstore serve: cannot write the first API key to data/initial-api-key: the disk holding it is full ' +
          '(ENOSPC): free space on it, then start again\n',
      ],
    )
    assert.deepEqual(readdirSync(join(cwd, 'data')), ['petstore.db'], 'no key file, whole or part')
    const listed = await runCli(['keys', 'list'], {}, cwd)
    assert.deepEqual(
      [listed.status, listed.stdout],
      [0, 'NAME  KEY  CREATED  REVOKED  DEPRECATED CALLS  LAST DEPRECATED CALL\n'],
      'no key stored',
    )
    execFileSync('mount', ['-o', 'remount,nr_inodes=16', cwd])
    await serveForTest(t, {}, cwd)
    assert.match(readFileSync(join(cwd, 'data', 'initial-api-key'), 'utf8'), /^psk_\S+\n$/)
  })
})
