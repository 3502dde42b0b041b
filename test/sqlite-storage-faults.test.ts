import assert from 'node:assert/strict'
import { statSync, truncateSync, unlinkSync } from 'node:fs'
import { Agent, request } from 'node:http'
import { describe, type TestContext, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { LOG_OUTPUT } from '../src/log/log-output-limits.ts'
import { temporaryDirectory } from './helpers/cleanup.ts'
import { logLines, type ServeProcess, waitForLog } from './helpers/cli-process.ts'
import {
  exhaustFileDescriptors,
  limitFileSize,
  MAX_CREATES_UNTIL_FULL,
  MIB,
  setUp,
} from './helpers/faulty-volume-server.ts'
import { assertUnavailable } from './helpers/pet-ledger.ts'
import {
  assertStorageFaultReported,
  fillFileSystem,
  mountExt4,
  mountingSuiteOptions,
  mountTmpfs,
  readinessBecomes,
  storageFaultLines,
  waitUntilReady,
} from './helpers/storage-faults.ts'
import { suiteNeedingPrlimit } from './helpers/suite-requirements.ts'

// Storage faults met by a running server; those a start or a command meets are in
// sqlite-storage-faults-at-start.test.ts.

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
      // Room for a few writes, not for the free space readiness asks: a write that finds room (before any
      // probe looked at the volume) is no recovery.
      truncateSync(filler, statSync(filler).size - 256 * 1024)
      await setup.ledger.createAcknowledged(server, 1)
      assert.equal(
        (await readinessBecomes(server, 503)).message,
        'not ready: the disk holding the database is full',
      )
      // Any line said by now is written once the log's interval has passed.
      await sleep(LOG_OUTPUT.flushIntervalMs + 200)
      assert.deepEqual(recoveries(server), [], 'no recovery said while the disk is still full')

      const refill = fillFileSystem(directory, 'filler-2')
      await assertStorageFaultReported(server, setup.ledger, 'disk_full')

      unlinkSync(refill)
      unlinkSync(filler)
      await waitUntilReady(server)
      await setup.ledger.createAcknowledged(server, 5)
      assert.equal(storageFaultLines(server).length, 1)
      await waitForLog(server, () => (recoveries(server).length > 0 ? true : undefined))
      assert.equal(recoveries(server).length, 1, 'one recovery, once the disk has room')

      await setup.kill(server)
      await setup.ledger.assertAllPresent(await setup.start())
    })
  }
})

/** The lines saying the storage recovered. */
function recoveries(server: ServeProcess) {
  return logLines(server).filter((line) => line.recoveredFrom !== undefined)
}

/** A server on an ext4 volume, with 10 pets acknowledged, then the kernel turns the volume read-only. */
async function serverOnAbortedVolume(t: TestContext) {
  const volume = mountExt4(t, 32 * MIB)
  const setup = setUp(t, volume.directory)
  const server = await setup.start()
  await setup.ledger.createAcknowledged(server, 10)
  volume.abort()
  return { volume, setup, server }
}

/** The storage fault lines, once there is one (the log is written within half a second). */
function faultLogged(server: ServeProcess) {
  return waitForLog(server, () => {
    const lines = storageFaultLines(server)
    return lines.length > 0 ? lines : undefined
  })
}

describe(
  'SQLite: readiness notices a full or read-only volume before any write fails',
  mountingSuiteOptions(['losetup', 'mkfs.ext4', 'e2fsck']),
  () => {
    // The volume is looked at at most once a second: a probe may see its state of a second ago.
    const NOTICED_WITHIN_MS = 3000

    test('when the disk fills up under an idle server, then /readyz is 503 with no write tried, and ready again once space is freed', async (t) => {
      const directory = mountTmpfs(t, 8 * MIB)
      const setup = setUp(t, directory)
      const server = await setup.start()
      await setup.ledger.createAcknowledged(server, 5)
      const filler = fillFileSystem(directory)

      const notReady = await readinessBecomes(server, 503, NOTICED_WITHIN_MS)
      assert.equal(notReady.message, 'not ready: the disk holding the database is full')
      const [fault, ...more] = await faultLogged(server)
      assert.equal(fault?.storageFault, 'disk_full')
      assert.equal(typeof fault.freeBytes, 'number', 'the line says how much is free')
      assert.equal(more.length, 0, 'one line')

      unlinkSync(filler)
      await readinessBecomes(server, 200, NOTICED_WITHIN_MS)
      await setup.ledger.createAcknowledged(server, 5)
      await waitForLog(server, (lines) => lines.find((line) => line.recoveredFrom === 'disk_full'))
      assert.equal(storageFaultLines(server).length, 1)
    })

    test('when the kernel turns the volume read-only under an idle server, then /readyz is 503 with no write tried', async (t) => {
      const { server } = await serverOnAbortedVolume(t)
      const notReady = await readinessBecomes(server, 503, NOTICED_WITHIN_MS)
      assert.equal(notReady.message, 'not ready: the database is on a read-only file system')
      const faults = await faultLogged(server)
      assert.deepEqual(
        faults.map((line) => line.storageFault),
        ['read_only'],
      )
    })
  },
)

describe(
  'SQLite: the file system turns read-only under a running server',
  mountingSuiteOptions(['losetup', 'mkfs.ext4', 'e2fsck']),
  () => {
    test('when the volume turns read-only while writes already fail with I/O errors, then /readyz names the read-only volume, which a restart needs, not the I/O errors', async (t) => {
      const volume = mountExt4(t, 32 * MIB)
      const setup = setUp(t, volume.directory)
      const server = await setup.start()
      await setup.ledger.createAcknowledged(server, 5)
      // First writes fail on a volume that looks healthy (EFBIG: an I/O error to SQLite)…
      limitFileSize(server, 4096)
      await assertStorageFaultReported(server, setup.ledger, 'io_error')
      // …then the kernel turns it read-only, as a failing disk's errors make it do.
      volume.abort()
      const notReady = await readinessBecomes(
        server,
        503,
        3000,
        (body) => body.message?.includes('read-only') === true,
      )
      assert.equal(notReady.message, 'not ready: the database is on a read-only file system')
      const faults = await waitForLog(server, () => {
        const lines = storageFaultLines(server).map((line) => line.storageFault)
        return lines.includes('read_only') ? lines : undefined
      })
      assert.deepEqual(faults, ['io_error', 'read_only'])
    })

    test('when the kernel remounts the volume read-only, then creates get 503 and /readyz 503; after repair and a restart every acknowledged pet is there', async (t) => {
      const { volume, setup, server } = await serverOnAbortedVolume(t)
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

describe(
  'SQLite: the operating system refuses writes on a volume that is neither full nor read-only',
  suiteNeedingPrlimit('the write-refusal suite'),
  () => {
    for (const writeThread of ['off', 'on']) {
      test(`when every write to the database fails with an I/O error (write thread ${writeThread}), then creates get 503 and /readyz 503 from the failed writes alone; once writes succeed again, both recover`, async (t) => {
        const setup = setUp(t, temporaryDirectory(t), writeThread)
        const server = await setup.start()
        await setup.ledger.createAcknowledged(server, 10)
        // A file-size limit under what the files already hold: every write past it fails (EFBIG), which
        // SQLite reports as an I/O error, while the volume's free space and mount look healthy.
        limitFileSize(server, 4096)

        await assertStorageFaultReported(server, setup.ledger, 'io_error')
        const notReady = await readinessBecomes(server, 503)
        assert.equal(notReady.message, 'not ready: the disk holding the database reports I/O errors')

        limitFileSize(server, 'unlimited')
        await waitUntilReady(server)
        await setup.ledger.createAcknowledged(server, 5)
        await waitForLog(server, (lines) => lines.find((line) => line.recoveredFrom === 'io_error'))
        await setup.kill(server)
        await setup.ledger.assertAllPresent(await setup.start())
      })
    }
  },
)

/** Calls `server` on one kept-alive connection: made first, it needs no descriptor once they run out. */
function keptAliveCaller(t: TestContext, server: ServeProcess, key: string) {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 })
  t.after(() => agent.destroy())
  const { hostname, port } = new URL(server.origin)
  return (method: string, path: string, body?: string) =>
    new Promise<{ status: number; body: { code?: string; message?: string } }>((resolve, reject) => {
      const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' }
      const call = request({ hostname, port, method, path, agent, headers }, (response) => {
        let text = ''
        response.setEncoding('utf8').on('data', (chunk: string) => {
          text += chunk
        })
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body: JSON.parse(text) }))
      })
      call.on('error', reject).end(body)
    })
}

describe(
  'SQLite: no file descriptor left when the write thread starts',
  suiteNeedingPrlimit('the descriptor suite'),
  () => {
    test('when the write thread cannot start (the open-file limit reached), then the create is refused with 503 as not made, not as possibly made; with descriptors free again, creates resume and the refused one is not stored', async (t) => {
      const setup = setUp(t, temporaryDirectory(t), 'on')
      const server = await setup.start()
      const call = keptAliveCaller(t, server, setup.key)
      const pet = JSON.stringify({ name: 'Rex', categoryId: 1 })
      assert.equal((await call('GET', '/v1/pets')).status, 200)
      const restore = exhaustFileDescriptors(server)
      const refused = await call('POST', '/v1/pets', pet)
      restore()
      assert.deepEqual(refused, {
        status: 503,
        body: {
          code: 'service_unavailable',
          message: 'the store is unavailable; retry shortly',
          status: 503,
        },
      })
      assert.equal((await call('POST', '/v1/pets', pet)).status, 201)
      const stored = await call('GET', '/v1/pets')
      assert.equal((stored.body as unknown as unknown[]).length, 1, 'the refused create was not stored')
    })
  },
)
