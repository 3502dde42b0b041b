import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import { generateApiKey } from '../src/auth/api-key.ts'
import { temporaryDirectory } from './helpers/cleanup.ts'
import { startServeProcess } from './helpers/cli-process.ts'
import { petLedger } from './helpers/pet-ledger.ts'
import { startThrowawayPostgres, throwawayPostgresSuiteOptions } from './helpers/postgres-server.ts'
import {
  crashKills,
  describeVerdict,
  newSetTestLog,
  startWriters,
  verdict,
  walkCatalogue,
} from './helpers/set-test.ts'

const WRITERS = 8

async function untilServing(origin: string, key: string): Promise<void> {
  let last = ''
  for (let attempt = 0; attempt < 80; attempt++) {
    const response = await fetch(`${origin}/v1/pets?limit=1`, { headers: { authorization: `Bearer ${key}` } })
    last = `${response.status} ${await response.text()}`
    if (response.status === 200) return
    await sleep(250)
  }
  throw new Error(`the service did not recover after the database came back (last answer: ${last})`)
}

// Under CI this suite must run; it stops its database, so it always starts a server of its own.
describe('crash durability (PostgreSQL)', throwawayPostgresSuiteOptions(), () => {
  const kills = crashKills()
  // About a second per stop here; the bound scales with CRASH_KILLS, so `npm run crash` is bounded too.
  test(`when the database is stopped in immediate mode ${kills} times under concurrent creates, then nothing acknowledged is lost and nothing unsent appears`, {
    timeout: 30_000 + kills * 10_000,
  }, async (t) => {
    const postgres = await startThrowawayPostgres()
    t.after(() => postgres.stop('immediate'))
    const key = generateApiKey()
    const env = {
      DATABASE_URL: await postgres.createDatabase(),
      API_KEYS: `crash:${key}`,
      PG_CONNECT_TIMEOUT_MS: '1000',
      PG_STATEMENT_TIMEOUT_MS: '2000',
      // The writers send thousands of requests a minute on one key (fast 503s during outages too).
      RATE_LIMIT_PER_MINUTE: '0',
    }
    const service = await startServeProcess(env, temporaryDirectory(t))
    t.after(() => service.child.kill('SIGKILL'))
    const log = newSetTestLog()
    const writers = startWriters({ count: WRITERS, log, key, origin: () => service.origin })
    // Stopped even when an assertion fails, or the writers would keep the test process alive.
    t.after(() => writers.stop())

    for (let kill = 0; kill < kills; kill++) {
      // A random moment: mid-transaction, mid-commit, or between requests; the database loses its memory
      // and replays its WAL when it comes back, like after a power cut.
      await sleep(150 + Math.random() * 350)
      postgres.stop('immediate')
      await sleep(100 + Math.random() * 200)
      postgres.start()
      await untilServing(service.origin, key)
    }
    await sleep(200)
    await writers.stop()

    const result = verdict(log, await walkCatalogue(service.origin, key))
    t.diagnostic(`${kills} immediate stops: ${describeVerdict(log, result)}`)
    assert.ok(log.ok.size > 50, `only ${log.ok.size} creates were acknowledged`)
    assert.deepEqual(result.lost, [], 'every acknowledged pet is present and identical')
    assert.deepEqual(result.unexpected, [], 'nothing is stored that was never sent')
    assert.deepEqual(result.refusedButStored, [], 'nothing refused is stored')
    assert.equal(service.child.exitCode, null, 'the service survived every outage')
  })

  test('when the database commits asynchronously by default (synchronous_commit=off) and is stopped in immediate mode, then every create acknowledged before is there after it restarts', async (t) => {
    const postgres = await startThrowawayPostgres()
    t.after(() => postgres.stop('immediate'))
    const url = await postgres.createDatabase()
    const admin = new pg.Client({ connectionString: url })
    await admin.connect()
    try {
      await admin.query(
        `ALTER DATABASE ${pg.escapeIdentifier(new URL(url).pathname.slice(1))} SET synchronous_commit = off`,
      )
      // The WAL writer flushes asynchronous commits every 200 ms by default: for 10 s they stay in memory.
      await admin.query("ALTER SYSTEM SET wal_writer_delay = '10s'")
      await admin.query('SELECT pg_reload_conf()')
    } finally {
      await admin.end()
    }
    const key = generateApiKey()
    const env = {
      DATABASE_URL: url,
      API_KEYS: `durable:${key}`,
      PG_CONNECT_TIMEOUT_MS: '1000',
      READ_CACHE_BYTES: '0',
    }
    const service = await startServeProcess(env, temporaryDirectory(t))
    t.after(() => service.child.kill('SIGKILL'))
    const ledger = petLedger(key)
    await ledger.createAcknowledged(service, 20)

    postgres.stop('immediate')
    postgres.start()
    await untilServing(service.origin, key)
    await ledger.assertAllPresent(service)
    // Setting the session up must not cost a warning on stderr (pg deprecates a query sent while one runs).
    assert.doesNotMatch(service.output(), /DeprecationWarning/)
  })
})
