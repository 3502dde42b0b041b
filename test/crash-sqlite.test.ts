import assert from 'node:assert/strict'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { generateApiKey } from '../src/auth/api-key.ts'
import { exitWithin, type ServeProcess, startServeProcess } from './helpers/cli-process.ts'
import {
  crashKills,
  describeVerdict,
  newSetTestLog,
  startWriters,
  verdict,
  walkCatalogue,
} from './helpers/set-test.ts'
import { temporaryDirectory } from './helpers/test-server.ts'

const WRITERS = 8

describe('crash durability (SQLite)', () => {
  const kills = crashKills()
  // About a second per kill here; the bound scales with CRASH_KILLS, so `npm run crash` is bounded too.
  test(`when the server is killed with SIGKILL ${kills} times under concurrent creates, then nothing acknowledged is lost and nothing unsent appears`, {
    timeout: 30_000 + kills * 10_000,
  }, async (t) => {
    const cwd = temporaryDirectory(t)
    const key = generateApiKey()
    // No rate limit: the writers send thousands of requests a minute on one key.
    const env = { API_KEYS: `crash:${key}`, RATE_LIMIT_PER_MINUTE: '0' }
    const log = newSetTestLog()
    let server: ServeProcess | undefined
    t.after(() => server?.child.kill('SIGKILL'))
    const writers = startWriters({ count: WRITERS, log, key, origin: () => server?.origin })
    // Stopped even when an assertion fails, or the writers would keep the test process alive.
    t.after(() => writers.stop())

    for (let kill = 0; kill < kills; kill++) {
      server = await startServeProcess(env, cwd)
      // A random moment: mid-batch, mid-fsync, mid-response, or between requests.
      await sleep(100 + Math.random() * 400)
      const victim = server
      server = undefined
      victim.child.kill('SIGKILL')
      await exitWithin(victim)
    }
    server = await startServeProcess(env, cwd)
    await sleep(200)
    await writers.stop()

    const result = verdict(log, await walkCatalogue(server.origin, key))
    t.diagnostic(`${kills} kills: ${describeVerdict(log, result)}`)
    assert.ok(log.ok.size > 50, `only ${log.ok.size} creates were acknowledged`)
    assert.deepEqual(result.lost, [], 'every acknowledged pet is present and identical')
    assert.deepEqual(result.unexpected, [], 'nothing is stored that was never sent')
    assert.deepEqual(result.refusedButStored, [], 'nothing refused is stored')

    server.child.kill('SIGTERM')
    assert.equal(await exitWithin(server), 0)
    const database = new DatabaseSync(join(cwd, 'data', 'petstore.db'), { readOnly: true })
    t.after(() => database.close())
    assert.equal(database.prepare('PRAGMA integrity_check').get()?.integrity_check, 'ok')
    const rows = database.prepare('SELECT count(*) AS n FROM pets').get() as { n: number }
    assert.equal(rows.n, log.ok.size + result.unknownStored, 'the walk through the API saw every row')
  })
})
