import assert from 'node:assert/strict'
import { join } from 'node:path'
import { describe, type TestContext, test } from 'node:test'
import { generateApiKey } from '../src/auth/api-key.ts'
import { SqliteStore } from '../src/store/sqlite/sqlite-store.ts'
import { runCli } from './helpers/cli-process.ts'
import { postgresLack, sharedPostgres } from './helpers/postgres-server.ts'
import { storeOn } from './helpers/postgres-store-fixtures.ts'
import { seedStore, storeContents } from './helpers/store-copy-fixtures.ts'
import { suiteNeeding } from './helpers/suite-requirements.ts'
import { temporaryDirectory } from './helpers/test-server.ts'

/**
 * A seeded SQLite source (its keys `old` and a revoked one, its cursor secret made as on a first serve)
 * copied once into a new target of `engine`; `copy` runs the same copy again.
 */
async function copiedOnce(t: TestContext, engine: 'sqlite' | 'postgres', pets: number) {
  const cwd = temporaryDirectory(t)
  const source = `sqlite:${join(cwd, 'source.db')}`
  const store = new SqliteStore({ path: join(cwd, 'source.db'), busyTimeoutMs: 5000 })
  await seedStore(store, pets, { oldKey: generateApiKey(), revokedKey: generateApiKey() })
  const served = new SqliteStore({ path: join(cwd, 'source.db'), busyTimeoutMs: 5000 })
  await served.serviceSecret()
  await served.close()
  const target =
    engine === 'sqlite' ? `sqlite:${join(cwd, 'target.db')}` : await (await sharedPostgres()).createDatabase()
  const copy = () => runCli(['copy', '--from', source, '--to', target], {}, cwd)
  const first = await copy()
  assert.equal(first.status, 0, first.stderr)
  return { cwd, source, target, copy }
}

// After the switch the target is the live store: a copy run again from the old source (to catch up on
// pets created meanwhile) must not undo what happened on the target since.
describe(
  'copy run again after the target has moved on',
  suiteNeeding('the copy suite', postgresLack()),
  () => {
    for (const engine of ['sqlite', 'postgres'] as const) {
      test(`when a key was revoked and deprecated calls counted on the ${engine} target after a copy, then a re-run keeps the revocation and never lowers the count`, {
        timeout: 120_000,
      }, async (t) => {
        const { cwd, target, copy } = await copiedOnce(t, engine, 30)

        assert.equal(
          (await runCli(['keys', 'revoke', '--name', 'old'], { DATABASE_URL: target }, cwd)).status,
          0,
        )
        const targetStore =
          engine === 'sqlite'
            ? new SqliteStore({ path: join(cwd, 'target.db'), busyTimeoutMs: 5000 })
            : storeOn(t, target)
        const [old] = (await targetStore.listApiKeys()).filter((key) => key.name === 'old')
        await targetStore.recordDeprecatedCalls([
          { apiKeyId: old?.id ?? 0n, calls: 5, lastCallAtMs: Date.parse('2026-06-01T10:00:00Z') },
        ])
        await targetStore.close()
        const before = (await storeContents(target)).keys

        const again = await copy()
        assert.equal(again.status, 0, again.stderr)
        const after = (await storeContents(target)).keys
        const revoked = after.find((key) => key.name === 'old')
        assert.notEqual(revoked?.revoked_at ?? null, null, 'the key revoked on the target stays revoked')
        assert.deepEqual(after, before, 'nothing of the keys went back to the source')
      })

      test(`when a re-run finds that both stores gave a new pet the same id since a copy into ${engine}, then it exits 1 naming it, and the target is not left marked as a copy under way`, {
        timeout: 120_000,
      }, async (t) => {
        const { cwd, source, target, copy } = await copiedOnce(t, engine, 10)
        const targetStore = () =>
          engine === 'sqlite'
            ? new SqliteStore({ path: join(cwd, 'target.db'), busyTimeoutMs: 5000 })
            : storeOn(t, target)
        // Both stores live on: each gives the next id, 11, to a pet of its own.
        for (const store of [source, target])
          assert.equal((await runCli(['seed', '--count', '1'], { DATABASE_URL: store }, cwd)).status, 0)

        const again = await copy()
        assert.equal(again.status, 1)
        assert.match(
          again.stderr,
          /1 pet of the source has an id the target holds with other content \(id 11\)/,
        )
        // Marked under way, the target would warn at every start and keep no list page for good: no re-run
        // can get past the conflict to finish it.
        const store = targetStore()
        const marks = await store.copyMarks()
        await store.close()
        assert.equal(marks.unfinishedSince, undefined)
      })

      test(`when a key was rotated on the source under its own name after a copy into ${engine}, then a re-run carries the revocation and the new key`, {
        timeout: 120_000,
      }, async (t) => {
        const { cwd, source, target, copy } = await copiedOnce(t, engine, 10)

        // The README's rotation, done with the old name kept: revoke, then create under the same name.
        const onSource = (...args: string[]) => runCli(['keys', ...args], { DATABASE_URL: source }, cwd)
        assert.equal((await onSource('revoke', '--name', 'old')).status, 0)
        assert.equal((await onSource('create', '--name', 'old')).status, 0)

        const again = await copy()
        assert.equal(again.status, 0, again.stderr)
        assert.deepEqual((await storeContents(target)).keys, (await storeContents(source)).keys)
      })
    }
  },
)
