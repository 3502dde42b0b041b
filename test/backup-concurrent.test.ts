import assert from 'node:assert/strict'
import { readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { generateApiKey } from '../src/auth/api-key.ts'
import { backupDatabase } from '../src/store/sqlite/sqlite-backup.ts'
import { SqliteStore } from '../src/store/sqlite/sqlite-store.ts'
import { seedStore } from './helpers/store-copy-fixtures.ts'
import { temporaryDirectory } from './helpers/test-server.ts'

// Above any pid the kernel gives: in this process's numbering, a process that is gone.
const GONE = 2_147_483_647

describe('SQLite backups that meet each other', () => {
  test('when two backups to one file run at once in processes of the same id (two containers, each PID 1), then both finish and the file is a whole backup', async (t) => {
    const cwd = temporaryDirectory(t)
    const database = join(cwd, 'petstore.db')
    const pets = 20_000
    await seedStore(new SqliteStore({ path: database, busyTimeoutMs: 5000 }), pets, {
      oldKey: generateApiKey(),
      revokedKey: generateApiKey(),
    })
    const to = join(cwd, 'nightly.db')
    // One process stands for both: the same id, as two containers' main processes have.
    const results = await Promise.allSettled([
      backupDatabase(database, to, { force: true }),
      backupDatabase(database, to, { force: true }),
    ])
    assert.deepEqual(
      results.map((result) => (result.status === 'fulfilled' ? result.value.pets : String(result.reason))),
      [BigInt(pets), BigInt(pets)],
    )
    assert.deepEqual(
      readdirSync(cwd).filter((name) => name.startsWith('.nightly.db.')),
      [],
      'no hidden copy is left',
    )
  })

  test("when another host's backup copy lies beside the file (a shared volume), then a backup leaves it, whatever its process id says here", async (t) => {
    const cwd = temporaryDirectory(t)
    const database = join(cwd, 'petstore.db')
    await seedStore(new SqliteStore({ path: database, busyTimeoutMs: 5000 }), 5, {
      oldKey: generateApiKey(),
      revokedKey: generateApiKey(),
    })
    const elsewhere = `.nightly.db.backup-${GONE}-other-host-0123abcd.tmp`
    writeFileSync(join(cwd, elsewhere), Buffer.alloc(4096))
    await backupDatabase(database, join(cwd, 'nightly.db'), { force: true })
    assert.deepEqual(
      readdirSync(cwd).filter((name) => name.startsWith('.nightly.db.')),
      [elsewhere],
    )
  })
})
