import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { generateApiKey } from '../src/auth/api-key.ts'
import { get } from './helpers/bearer-call.ts'
import { waitUntil } from './helpers/bounded-wait.ts'
import { temporaryDirectory } from './helpers/cleanup.ts'
import { exitWithin, logLines, startServeProcess } from './helpers/cli-process.ts'
import { postgresLack, sharedPostgres } from './helpers/postgres-server.ts'
import { adminOn } from './helpers/postgres-store-fixtures.ts'
import { suiteNeeding } from './helpers/suite-requirements.ts'

// The service writes its deprecated-call counts every 5 s (routes/v1-api.ts); a write held on a row lock
// fails after the statement timeout, 10 s here: calls made in the 8 s after the lock is taken include
// some made while that write waits, and none after it fails.
const STATEMENT_TIMEOUT_MS = 10_000
const CALLING_MS = 8000

describe(
  'deprecated-call counts when their write fails',
  suiteNeeding('the counts suite', postgresLack()),
  () => {
    test('when a write of the counts fails while getPet is still being called, then no call is lost: the next write holds those it failed to write and those made while it waited, and the last call time is the latest', {
      timeout: 90_000,
    }, async (t) => {
      const url = await (await sharedPostgres()).createDatabase()
      const key = generateApiKey()
      const service = await startServeProcess(
        {
          DATABASE_URL: url,
          API_KEYS: `legacy:${key}`,
          RATE_LIMIT_PER_MINUTE: '0',
          PG_STATEMENT_TIMEOUT_MS: String(STATEMENT_TIMEOUT_MS),
        },
        temporaryDirectory(t),
      )
      t.after(() => service.child.kill('SIGKILL'))
      const admin = await adminOn(t, url)
      const recorded = async () =>
        (
          await admin.query<{ calls: number; last: Date | null }>(
            'SELECT deprecated_calls::int AS calls, last_deprecated_call_at AS last FROM api_keys WHERE name = $1',
            ['legacy'],
          )
        ).rows[0]
      let calls = 0
      const callGetPet = async () => {
        assert.equal((await get(service.origin, '/v1/pets/1', key)).status, 404)
        calls++
      }
      for (let i = 0; i < 3; i++) await callGetPet()
      await waitUntil(async () => (await recorded())?.calls === 3, 'the first counts were not written', {
        timeoutMs: 15_000,
        everyMs: 100,
      })

      // The key's row locked: the next write of the counts waits on it until its statement times out.
      await admin.query('BEGIN')
      await admin.query('SELECT 1 FROM api_keys WHERE name = $1 FOR UPDATE', ['legacy'])
      const lockedAt = Date.now()
      let lastCallAt = 0
      while (Date.now() - lockedAt < CALLING_MS) {
        lastCallAt = Date.now()
        await callGetPet()
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
      const failed = () =>
        logLines(service).some((line) => line.job === 'deprecated-call flush' && Number(line.level) === 40)
      await waitUntil(failed, 'the held write did not fail', { timeoutMs: 20_000, everyMs: 100 })
      await admin.query('ROLLBACK')

      service.child.kill('SIGTERM')
      assert.equal(await exitWithin(service, 30_000), 0, service.output().slice(-2000))
      const { calls: written, last } = (await recorded()) ?? { calls: 0, last: null }
      assert.equal(written, calls, `${calls} calls made, ${written} written`)
      assert.ok(
        (last?.getTime() ?? 0) >= lastCallAt - 1000,
        `the last call written ${last?.toISOString()}, the last made ${new Date(lastCallAt).toISOString()}`,
      )
    })
  },
)
