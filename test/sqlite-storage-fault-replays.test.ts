import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { temporaryDirectory } from './helpers/cleanup.ts'
import { requesterFor, type ServeProcess, waitForLog } from './helpers/cli-process.ts'
import { checkedFetch } from './helpers/conformance-fetch.ts'
import { limitFileSize, MAX_CREATES_UNTIL_FULL, MIB, setUp } from './helpers/faulty-volume-server.ts'
import { assertUnavailable } from './helpers/pet-ledger.ts'
import {
  fillFileSystem,
  mountExt4,
  mountingSuiteOptions,
  mountTmpfs,
  storageFaultLines,
  waitUntilReady,
} from './helpers/storage-faults.ts'

/** A keyed create through a serve process. */
function keyedCreate(server: ServeProcess, key: string, idempotencyKey: string, name = 'Rex') {
  return requesterFor(key)(server, '/v1/pets', {
    method: 'POST',
    body: JSON.stringify({ name, categoryId: 1 }),
    headers: { 'idempotency-key': idempotencyKey },
  })
}

const RETRIED = ['order-1', 'order-2', 'order-3', 'order-4']

/** The creates whose answers a client will have lost: acknowledged, each body by its key. */
async function createRetriedLater(server: ServeProcess, key: string): Promise<Map<string, string>> {
  const bodies = new Map<string, string>()
  for (const idempotencyKey of RETRIED) {
    const created = await keyedCreate(server, key, idempotencyKey)
    const text = await created.text()
    assert.equal(created.status, 201, text)
    bodies.set(idempotencyKey, text)
  }
  return bodies
}

/**
 * Clients whose answers were lost retry while the database takes no writes: their pets exist, and they
 * are told so, alone or in one batch with new creates (which need a write: 503); a key reused for another
 * pet is refused as ever. The fault is logged once, and the store stays not ready.
 */
async function assertKeyedRetriesReplayed(
  server: ServeProcess,
  key: string,
  bodies: Map<string, string>,
  fault: string,
) {
  // Together, so that some share a batch (one transaction) with creates that cannot be written.
  const sent = [['order-1'], ['new-1'], ['order-2'], ['new-2'], ['order-3'], ['order-4', 'Other']] as const
  const answers = await Promise.all(
    sent.map(([idempotencyKey, name]) => keyedCreate(server, key, idempotencyKey, name)),
  )
  for (const [index, answer] of answers.entries()) {
    const [idempotencyKey, name] = sent[index] as (typeof sent)[number]
    const earlier = bodies.get(idempotencyKey)
    if (earlier === undefined) {
      await assertUnavailable(answer, `new create ${idempotencyKey}`)
    } else if (name !== undefined) {
      assert.equal(answer.status, 422, `${idempotencyKey} for another pet: ${await answer.clone().text()}`)
      assert.equal(((await answer.json()) as { code: string }).code, 'idempotency_key_reused')
    } else {
      assert.equal(answer.status, 201, `retry of ${idempotencyKey}: ${await answer.clone().text()}`)
      assert.equal(await answer.text(), earlier)
      assert.equal(answer.headers.get('idempotent-replayed'), 'true')
    }
  }
  // A batch of replays alone writes nothing, so it proves no write works again: still not ready.
  const alone = await keyedCreate(server, key, 'order-2')
  assert.equal(await alone.text(), bodies.get('order-2'))
  const readiness = await checkedFetch(server.origin, '/readyz')
  assert.equal(readiness.status, 503, `not ready while the fault lasts: ${await readiness.text()}`)
  const lines = await waitForLog(server, () => {
    const found = storageFaultLines(server)
    return found.length > 0 ? found : undefined
  })
  assert.deepEqual(
    lines.map((line) => line.storageFault),
    [fault],
  )
}

describe(
  'SQLite: a create retried with its Idempotency-Key while the database takes no writes',
  mountingSuiteOptions(['losetup', 'mkfs.ext4', 'e2fsck', 'prlimit']),
  () => {
    for (const writeThread of ['off', 'on']) {
      test(`when the disk is full (write thread ${writeThread}), then each retry gets its pet again, alone or beside new creates, which get 503`, async (t) => {
        const directory = mountTmpfs(t, 8 * MIB)
        const setup = setUp(t, directory, writeThread)
        const server = await setup.start()
        const bodies = await createRetriedLater(server, setup.key)
        fillFileSystem(directory)
        let refused = false
        for (let i = 0; i < MAX_CREATES_UNTIL_FULL && !refused; i++)
          refused = (await setup.ledger.create(server)).status === 503
        assert.ok(refused, `no create was refused in ${MAX_CREATES_UNTIL_FULL} on a full disk`)
        await assertKeyedRetriesReplayed(server, setup.key, bodies, 'disk_full')
      })

      test(`when the kernel turns the volume read-only (write thread ${writeThread}), then each retry gets its pet again, and new creates 503`, async (t) => {
        const volume = mountExt4(t, 32 * MIB)
        const setup = setUp(t, volume.directory, writeThread)
        const server = await setup.start()
        const bodies = await createRetriedLater(server, setup.key)
        volume.abort()
        await assertKeyedRetriesReplayed(server, setup.key, bodies, 'read_only')
      })

      test(`when every write fails with an I/O error (write thread ${writeThread}), then each retry gets its pet again, new creates 503, and the store stays not ready`, async (t) => {
        const setup = setUp(t, temporaryDirectory(t), writeThread)
        const server = await setup.start()
        const bodies = await createRetriedLater(server, setup.key)
        // Neither full nor read-only: only the writes' failures tell the store it cannot write.
        limitFileSize(server, 4096)
        await assertKeyedRetriesReplayed(server, setup.key, bodies, 'io_error')
        // SQLite's own words, from the write thread too.
        assert.match(String(storageFaultLines(server)[0]?.msg), /\(SQLite: disk I\/O error, code \d+\)/)

        limitFileSize(server, 'unlimited')
        await waitUntilReady(server)
        // A key whose create was refused was not kept: its create is new now.
        const fresh = await keyedCreate(server, setup.key, 'new-1')
        assert.equal(fresh.status, 201)
        assert.equal(fresh.headers.get('idempotent-replayed'), null)
      })
    }
  },
)
