import assert from 'node:assert/strict'
import { renameSync, unlinkSync } from 'node:fs'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { describe, type TestContext, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { generateApiKey } from '../src/auth/api-key.ts'
import { temporaryDirectory } from './helpers/cleanup.ts'
import { exitWithin, type ServeProcess, startServeProcess } from './helpers/cli-process.ts'
import { assertUnavailable, petLedger } from './helpers/pet-ledger.ts'
import { assertStorageFaultReported, waitUntilReady } from './helpers/storage-faults.ts'

function setUp(t: TestContext, env: Record<string, string> = {}) {
  const cwd = temporaryDirectory(t)
  const key = generateApiKey()
  const database = join(cwd, 'data', 'petstore.db')
  const servers: ServeProcess[] = []
  t.after(() => {
    for (const server of servers) server.child.kill('SIGKILL')
  })
  return {
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

describe('SQLite: the database file changes under a running server', () => {
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
      // Time for the create to reach its commit and wait for the lock there (a few milliseconds unloaded).
      await sleep(500)
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
      await assertUnavailable(answer, 'the create committed into the deleted file')
      await assertStorageFaultReported(server, setup.ledger, 'file_replaced')
    })
  }
})
