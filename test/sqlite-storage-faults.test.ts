import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { unlinkSync } from 'node:fs'
import { join } from 'node:path'
import { describe, type TestContext, test } from 'node:test'
import { generateApiKey } from '../src/auth/api-key.ts'
import { temporaryDirectory } from './helpers/cleanup.ts'
import { exitWithin, type ServeProcess, startServeProcess } from './helpers/cli-process.ts'
import { assertUnavailable, petLedger } from './helpers/pet-ledger.ts'
import {
  assertStorageFaultReported,
  fillFileSystem,
  mountExt4,
  mountingSuiteOptions,
  mountTmpfs,
  storageFaultLines,
  waitUntilReady,
} from './helpers/storage-faults.ts'

const MIB = 1024 * 1024
// A full disk refuses a create only once SQLite needs a new block: the log may have room for a few more.
const MAX_CREATES_UNTIL_FULL = 200

function setUp(t: TestContext, directory: string, writeThread = 'off') {
  const cwd = temporaryDirectory(t)
  const key = generateApiKey()
  const env = {
    API_KEYS: `faults:${key}`,
    RATE_LIMIT_PER_MINUTE: '0',
    DATABASE_URL: `sqlite:${join(directory, 'petstore.db')}`,
    SQLITE_WRITE_THREAD: writeThread,
  }
  const servers: ServeProcess[] = []
  t.after(() => {
    for (const server of servers) server.child.kill('SIGKILL')
  })
  return {
    ledger: petLedger(key),
    async start(): Promise<ServeProcess> {
      const server = await startServeProcess(env, cwd)
      servers.push(server)
      return server
    },
    async kill(server: ServeProcess): Promise<void> {
      server.child.kill('SIGKILL')
      await exitWithin(server)
    },
  }
}

describe('SQLite: the disk fills up under a running server', mountingSuiteOptions(), () => {
  for (const writeThread of ['off', 'on']) {
    test(`when the disk is full (write thread ${writeThread}), then creates get 503 with Retry-After and /readyz 503; once space is freed both recover, and every acknowledged pet survives a restart`, async (t) => {
      const directory = mountTmpfs(t, 8 * MIB)
      const setup = setUp(t, directory, writeThread)
      const server = await setup.start()
      await setup.ledger.createAcknowledged(server, 10)
      const filler = fillFileSystem(directory)

      let refused: Response | undefined
      for (let i = 0; i < MAX_CREATES_UNTIL_FULL && refused === undefined; i++) {
        const response = await setup.ledger.create(server)
        if (response.status !== 201) refused = response
      }
      assert.ok(refused, `no create was refused in ${MAX_CREATES_UNTIL_FULL} on a full disk`)
      await assertUnavailable(refused, 'the first create refused on a full disk')
      await assertStorageFaultReported(server, setup.ledger, 'disk_full')

      unlinkSync(filler)
      await waitUntilReady(server)
      await setup.ledger.createAcknowledged(server, 5)
      assert.equal(storageFaultLines(server).length, 1)

      await setup.kill(server)
      await setup.ledger.assertAllPresent(await setup.start())
    })
  }
})

describe('SQLite: a read-only volume at start', mountingSuiteOptions(), () => {
  test('when the volume is read-only as the service starts, then it refuses with one line naming why; remounted read-write, it starts with every pet', async (t) => {
    const directory = mountTmpfs(t, 8 * MIB)
    const setup = setUp(t, directory)
    const server = await setup.start()
    await setup.ledger.createAcknowledged(server, 5)
    server.child.kill('SIGTERM')
    assert.equal(await exitWithin(server), 0)
    // Linux refuses this while a process has files open for writing on the volume (EBUSY): a running
    // server's volume turns read-only only by the kernel's own doing, as in the next suite.
    execFileSync('mount', ['-o', 'remount,ro', directory])
    await assert.rejects(setup.start(), /cannot open the database .* is on a read-only file system/)
    execFileSync('mount', ['-o', 'remount,rw', directory])
    await setup.ledger.assertAllPresent(await setup.start())
  })
})

describe(
  'SQLite: the file system turns read-only under a running server',
  mountingSuiteOptions(['losetup', 'mkfs.ext4', 'e2fsck']),
  () => {
    test('when the kernel remounts the volume read-only, then creates get 503 and /readyz 503; after repair and a restart every acknowledged pet is there', async (t) => {
      const volume = mountExt4(t, 32 * MIB)
      const setup = setUp(t, volume.directory)
      const server = await setup.start()
      await setup.ledger.createAcknowledged(server, 10)
      volume.abort()

      await assertStorageFaultReported(server, setup.ledger, 'read_only')
      await setup.kill(server)
      volume.repair()
      const restarted = await setup.start()
      await waitUntilReady(restarted)
      await setup.ledger.createAcknowledged(restarted, 5)
      await setup.ledger.assertAllPresent(restarted)
    })
  },
)
