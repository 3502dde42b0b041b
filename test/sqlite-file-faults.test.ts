import assert from 'node:assert/strict'
import {
  closeSync,
  fstatSync,
  openSync,
  renameSync,
  statSync,
  truncateSync,
  unlinkSync,
  writeSync,
} from 'node:fs'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { describe, type TestContext, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { generateApiKey } from '../src/auth/api-key.ts'
import { temporaryDirectory } from './helpers/cleanup.ts'
import {
  exitWithin,
  requesterFor,
  runCli,
  type ServeProcess,
  startServeProcess,
} from './helpers/cli-process.ts'
import { checkedFetch } from './helpers/conformance-fetch.ts'
import { assertUnavailable, petLedger } from './helpers/pet-ledger.ts'
import { assertStorageFaultReported, storageFaultLines, waitUntilReady } from './helpers/storage-faults.ts'

function setUp(t: TestContext, env: Record<string, string> = {}) {
  const cwd = temporaryDirectory(t)
  const key = generateApiKey()
  const database = join(cwd, 'data', 'petstore.db')
  const servers: ServeProcess[] = []
  t.after(() => {
    for (const server of servers) server.child.kill('SIGKILL')
  })
  return {
    cwd,
    key,
    database,
    ledger: petLedger(key),
    env: { API_KEYS: `faults:${key}`, RATE_LIMIT_PER_MINUTE: '0', ...env },
    async start(): Promise<ServeProcess> {
      const server = await startServeProcess(this.env, cwd)
      servers.push(server)
      return server
    },
    async kill(server: ServeProcess): Promise<void> {
      server.child.kill('SIGKILL')
      await exitWithin(server)
    },
  }
}

/** Overwrites the second half of a file with 0xff bytes, as a failing disk or a stray write might. */
function damageSecondHalf(path: string): void {
  const fd = openSync(path, 'r+')
  try {
    const { size } = fstatSync(fd)
    const from = Math.floor(size / 2)
    writeSync(fd, Buffer.alloc(size - from, 0xff), 0, size - from, from)
  } finally {
    closeSync(fd)
  }
}

/** Every row `sql` reads from the database at `path`, opened and closed again. */
function rowsOf(path: string, sql: string): unknown[] {
  const db = new DatabaseSync(path)
  try {
    return db
      .prepare(sql)
      .all()
      .map((row) => ({ ...row }))
  } finally {
    db.close()
  }
}

describe('SQLite: the database file changes under a running server', () => {
  test('when pages of the database file are damaged under it, then reading them is a 503, creates are refused and /readyz stays 503 until a restore, and pets on sound pages are still served', async (t) => {
    const setup = setUp(t)
    const seeded = await runCli(['seed', '--count', '20000'], {}, setup.cwd)
    assert.equal(seeded.status, 0, seeded.stderr)
    const server = await setup.start()
    damageSecondHalf(setup.database)

    // Pets across the whole range, none read before the damage (so none cached): each is served or refused.
    const request = requesterFor(setup.key)
    const statuses: number[] = []
    for (let id = 1; id <= 20_000; id += 1999) {
      const response = await request(server, `/v1/pets/${id}`)
      statuses.push(response.status)
      if (response.status !== 200) await assertUnavailable(response, `pet ${id}`)
    }
    assert.ok(statuses.includes(503), `no read met the damage: ${statuses.join(' ')}`)
    assert.ok(statuses.includes(200), `no read was served: ${statuses.join(' ')}`)

    await assertStorageFaultReported(server, setup.ledger, 'corrupt')
    const [line] = storageFaultLines(server)
    assert.match(String(line?.msg), /restore the database from a backup/)
    // A damaged file does not mend: past the readiness probe's interval (1 s) nothing is taken or ready.
    await sleep(1500)
    const readiness = await checkedFetch(server.origin, '/readyz')
    assert.equal(readiness.status, 503, 'ready again while the file is still damaged')
    await assertUnavailable(await setup.ledger.create(server), 'a create after the probe')
    assert.equal(setup.ledger.acknowledged.size, 0, 'a create was acknowledged into the damaged file')
  })

  for (const writeThread of ['off', 'on']) {
    test(`when the database file is deleted (write thread ${writeThread}), then no create is acknowledged, /readyz is 503, one error is logged, every pet can still be read, and a restart refuses the orphaned log`, async (t) => {
      const setup = setUp(t, { SQLITE_WRITE_THREAD: writeThread })
      const server = await setup.start()
      await setup.ledger.createAcknowledged(server, 10)
      unlinkSync(setup.database)

      await assertStorageFaultReported(server, setup.ledger, 'file_replaced')
      await setup.ledger.assertAllPresent(server)

      await setup.kill(server)
      await assert.rejects(setup.start(), /petstore\.db is missing but its write-ahead log/)
    })
  }

  for (const writeThread of ['off', 'on']) {
    test(`when the database file is renamed and later renamed back (write thread ${writeThread}), then nothing is acknowledged meanwhile, and then writes resume and survive a restart`, async (t) => {
      const setup = setUp(t, { SQLITE_WRITE_THREAD: writeThread })
      const server = await setup.start()
      await setup.ledger.createAcknowledged(server, 10)
      renameSync(setup.database, `${setup.database}.moved`)

      await assertStorageFaultReported(server, setup.ledger, 'file_replaced')
      renameSync(`${setup.database}.moved`, setup.database)
      await waitUntilReady(server)
      await setup.ledger.createAcknowledged(server, 5)

      await setup.kill(server)
      await setup.ledger.assertAllPresent(await setup.start())
    })

    test(`when another database is moved over the database file and the server is then stopped (write thread ${writeThread}), then nothing is acknowledged meanwhile and the other database opens intact, without the first one's log`, async (t) => {
      const setup = setUp(t, { SQLITE_WRITE_THREAD: writeThread })
      const server = await setup.start()
      await setup.ledger.createAcknowledged(server, 10)
      const other = join(setup.cwd, 'other.db')
      assert.equal(
        (await runCli(['seed', '--count', '3'], { DATABASE_URL: `sqlite:${other}` }, setup.cwd)).status,
        0,
      )
      const otherPets = rowsOf(other, 'SELECT id, name FROM pets ORDER BY id')
      renameSync(other, setup.database)

      await assertStorageFaultReported(server, setup.ledger, 'file_replaced')
      await setup.kill(server)
      // The first database's log, left at the path, would be replayed onto the other one at its next open.
      assert.deepEqual(rowsOf(setup.database, 'PRAGMA integrity_check'), [{ integrity_check: 'ok' }])
      assert.deepEqual(rowsOf(setup.database, 'SELECT id, name FROM pets ORDER BY id'), otherPets)
    })

    test(`when the -wal file is deleted and the server is then killed (write thread ${writeThread}), then nothing is acknowledged after the deletion and every earlier pet survives`, async (t) => {
      const setup = setUp(t, { SQLITE_WRITE_THREAD: writeThread })
      const server = await setup.start()
      await setup.ledger.createAcknowledged(server, 10)
      unlinkSync(`${setup.database}-wal`)

      await assertStorageFaultReported(server, setup.ledger, 'file_replaced')
      await setup.kill(server)
      const restarted = await setup.start()
      await setup.ledger.createAcknowledged(restarted, 1)
      await setup.ledger.assertAllPresent(restarted)
    })
  }

  // Zeroed: cut to nothing and grown back to its length, as a commit past the cut grows it (sparse).
  for (const [cut, writeThread] of [
    ['to nothing', 'off'],
    ['to zeros', 'off'],
    ['to zeros', 'on'],
    ['to half its length', 'off'],
  ] as const) {
    test(`when the -wal file is cut ${cut} under a running server (write thread ${writeThread}), then no create is acknowledged after the cut, and a stop leaves the database file whole, without the cut log copied in`, async (t) => {
      const setup = setUp(t, { SQLITE_WRITE_THREAD: writeThread })
      const server = await setup.start()
      // Committed into the log, not yet copied into the database file: what the cut takes away.
      await setup.ledger.createAcknowledged(server, 10)
      const log = `${setup.database}-wal`
      const { size } = statSync(log)
      truncateSync(log, cut === 'to half its length' ? Math.floor(size / 2) : 0)
      if (cut === 'to zeros') truncateSync(log, size)

      await assertStorageFaultReported(server, setup.ledger, 'log_cut')
      const [line] = storageFaultLines(server)
      assert.match(
        String(line?.msg),
        /-wal was cut short while in use .*; new creates are refused .*; restart the service/,
      )
      // The close must not checkpoint: the index would copy the cut log's missing pages over the database.
      server.child.kill('SIGTERM')
      assert.equal(await exitWithin(server), 0)
      assert.deepEqual(rowsOf(setup.database, 'PRAGMA integrity_check'), [{ integrity_check: 'ok' }])
      const restarted = await setup.start()
      await setup.ledger.createAcknowledged(restarted, 1)
    })
  }

  for (const writeThread of ['off', 'on']) {
    test(`when the -shm file is deleted and a command then opens the database (write thread ${writeThread}), then the server acknowledges no create beside it, and after a restart the command's key and every acknowledged pet are there, the file whole`, async (t) => {
      const setup = setUp(t, { SQLITE_WRITE_THREAD: writeThread })
      const server = await setup.start()
      await setup.ledger.createAcknowledged(server, 10)
      // The command makes a new -shm: its locks and the server's no longer exclude each other.
      unlinkSync(`${setup.database}-shm`)
      const made = await runCli(['keys', 'create', '--name', 'after'], {}, setup.cwd)
      assert.equal(made.status, 0, made.stderr)

      await assertStorageFaultReported(server, setup.ledger, 'file_replaced')
      const [line] = storageFaultLines(server)
      assert.match(
        String(line?.msg),
        /-shm was deleted or replaced while in use .*: new creates are refused .*; restart the service/,
      )
      // Stopped as an operator restarts it: its close must not checkpoint by its stale index, which would
      // drop the command's commit from the log.
      server.child.kill('SIGTERM')
      assert.equal(await exitWithin(server), 0)
      assert.deepEqual(rowsOf(setup.database, 'PRAGMA integrity_check'), [{ integrity_check: 'ok' }])
      const restarted = await setup.start()
      assert.equal((await requesterFor(made.stdout.trim())(restarted, '/v1/pets')).status, 200)
      await setup.ledger.createAcknowledged(restarted, 1)
      await setup.ledger.assertAllPresent(restarted)
    })
  }

  for (const writeThread of ['off', 'on']) {
    test(`when the database file is deleted while a create waits for the write lock (write thread ${writeThread}), then that create, committed into the deleted file, is not acknowledged`, async (t) => {
      const setup = setUp(t, { SQLITE_WRITE_THREAD: writeThread })
      const server = await setup.start()
      await setup.ledger.createAcknowledged(server, 1)
      // Another process holds the write lock, so the create passes the check made before its commit and
      // then waits inside it; the file is deleted meanwhile, and only the check after the commit sees it.
      const lock = new DatabaseSync(setup.database)
      t.after(() => lock.close())
      lock.exec('BEGIN IMMEDIATE')
      const answered: { at?: number } = {}
      const waiting = setup.ledger.create(server).finally(() => {
        answered.at = performance.now()
      })
      // Time for the create to reach its commit and wait for the lock there: a few milliseconds unloaded,
      // 2 s for a loaded host, well inside the 5 s the create waits for the lock (SQLITE_BUSY_TIMEOUT_MS).
      await sleep(2000)
      assert.equal(
        answered.at,
        undefined,
        'the create was answered before the file went: it never waited for the lock',
      )
      unlinkSync(setup.database)
      await sleep(200)
      const releasedAt = performance.now()
      lock.exec('ROLLBACK')

      const answer = await waiting
      // Answered only once the lock was let go: it was waiting inside its commit, past the first check.
      assert.ok((answered.at ?? 0) > releasedAt, 'the create was answered while the lock was still held')
      const said = ((await answer.clone().json()) as { message: string }).message
      await assertUnavailable(answer, 'the create committed into the deleted file')
      // Committed all the same, into a file a restart will not open: in doubt, not "retry shortly".
      assert.match(said, /moved or deleted meanwhile, .* so it may have been made: look for it/)
      await assertStorageFaultReported(server, setup.ledger, 'file_replaced')
    })

    test(`when the database file is renamed while a create with an Idempotency-Key waits for the write lock (write thread ${writeThread}), then its 503 says it may have been made, and once the file is renamed back the retry answers with that pet, made once`, async (t) => {
      const setup = setUp(t, { SQLITE_WRITE_THREAD: writeThread })
      const server = await setup.start()
      const request = requesterFor(setup.key)
      const lock = new DatabaseSync(setup.database)
      t.after(() => lock.close())
      lock.exec('BEGIN IMMEDIATE')
      const send = () =>
        request(server, '/v1/pets', {
          method: 'POST',
          body: JSON.stringify({ name: 'Moved', categoryId: 7 }),
          headers: { 'idempotency-key': 'moved-1' },
        })
      const waiting = send()
      // As above: time for the create to pass the first check and wait for the lock inside its commit.
      await sleep(2000)
      const moved = `${setup.database}.moved`
      renameSync(setup.database, moved)
      await sleep(200)
      lock.exec('ROLLBACK')
      const answer = await waiting
      const said = ((await answer.clone().json()) as { message: string }).message
      await assertUnavailable(answer, 'the create committed into the renamed file')
      assert.match(said, /so it may have been made: retry with the same Idempotency-Key/)

      renameSync(moved, setup.database)
      const retried = await send()
      assert.equal(retried.status, 201, await retried.clone().text())
      assert.equal(retried.headers.get('idempotent-replayed'), 'true')
      const pets = (await (await request(server, '/v1/pets?limit=100')).json()) as Array<{ name: string }>
      assert.equal(pets.filter((pet) => pet.name === 'Moved').length, 1)
    })
  }
})
