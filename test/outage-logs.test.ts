import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import pino from 'pino'
import { generateApiKey } from '../src/auth/api-key.ts'
import { ConditionLog } from '../src/http/condition-log.ts'
import { waitFor, waitUntil } from './helpers/bounded-wait.ts'
import { temporaryDirectory } from './helpers/cleanup.ts'
import {
  type LogLine,
  logLines,
  requesterFor,
  type ServeProcess,
  startServeProcess,
  waitForLog,
} from './helpers/cli-process.ts'
import { conformanceAt } from './helpers/conformance-fetch.ts'
import { startThrowawayPostgres, throwawayPostgresSuiteOptions } from './helpers/postgres-server.ts'

const key = generateApiKey()
const request = requesterFor(key)
const hasStack = (line: LogLine) => typeof (line.err as { stack?: unknown } | undefined)?.stack === 'string'

/** Polls `path` until it answers 200 (the database back and reconnected); fails after 10 s with `what`. */
async function answersOk(service: ServeProcess, path: string, what: string): Promise<void> {
  await waitUntil(async () => (await request(service, path)).status === 200, what, { everyMs: 250 })
}

/** A logger at info whose lines are kept, parsed, in `lines`. */
function collectingLogger() {
  const lines: LogLine[] = []
  const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) })
  return { lines, logger }
}

/** The first line of `lines` saying a condition has passed, once written. */
function passedIn(lines: LogLine[]): Promise<LogLine> {
  return waitFor(
    () => lines.find((line) => String(line.msg).includes('passed')),
    () => `not logged: ${JSON.stringify(lines)}`,
  )
}

/** The line saying `condition` has passed, once written. */
function passedLine(service: ServeProcess, condition: string): Promise<LogLine> {
  return waitForLog(service, (lines) =>
    lines.find((line) => line.condition === condition && String(line.msg).includes('passed')),
  )
}

describe('condition log', () => {
  test('when requests keep meeting a condition, then it is logged when it starts (with the error), at most once per repeat interval while it lasts, and once when it has passed', async () => {
    const { lines, logger } = collectingLogger()
    // Quiet long enough that a loaded machine's late timer cannot end the condition before the test's 150 ms.
    const conditions = new ConditionLog(logger, { quietMs: 2000, repeatMs: 100 })
    const failure = new Error('the database is unreachable', {
      cause: new Error('connect ECONNREFUSED 127.0.0.1:5432'),
    })
    conditions.met('the store is unavailable', 'error', { err: failure }, 'r-0')
    for (let i = 1; i <= 4; i++)
      conditions.met('the store is unavailable', 'error', { err: failure }, `r-${i}`)
    assert.equal(lines.length, 1, 'one line for five requests')
    assert.equal(lines[0]?.level, 50)
    assert.equal(lines[0]?.reqId, 'r-0')
    assert.ok(hasStack(lines[0] as LogLine))
    await sleep(150)
    conditions.met('the store is unavailable', 'error', { err: failure }, 'r-5')
    const still = lines[1] as LogLine
    assert.equal(still.msg, 'the store is unavailable: still failing requests')
    assert.equal(still.failedRequests, 5, 'the requests since the last line')
    assert.equal(hasStack(still), false)
    assert.equal(
      still.error,
      'the database is unreachable: connect ECONNREFUSED 127.0.0.1:5432',
      'the latest error, in one line, with its cause',
    )
    const passed = await passedIn(lines)
    assert.equal(passed.failedRequests, 6)
    assert.equal(passed.level, 40)
    // Seen from the requests alone: none came for a while, which is not the store seen back.
    assert.equal(
      passed.msg,
      'the store is unavailable: passed, as far as requests tell: none met it for 2000 ms',
    )
    assert.equal(lines.length, 3)
    conditions.met('the store is unavailable', 'error', { err: failure }, 'r-6')
    assert.equal(lines.length, 4, 'met again after it passed: a new start, with the error')
    assert.ok(hasStack(lines[3] as LogLine))
  })
})

describe('condition log: requests that wait before they meet it', () => {
  test('when requests meet a condition only after waiting (a lock held, each at its statement timeout), in waves further apart than the quiet period, then it lasts through the gaps: one start, and passed only once no request met it for the quiet period beyond the longest wait', async () => {
    const { lines, logger } = collectingLogger()
    const conditions = new ConditionLog(logger, { quietMs: 200, repeatMs: 60_000 })
    const failure = new Error('canceling statement due to statement timeout')
    // Waves 250 ms apart, the condition's end 2 s after each: a wave late by under 1.7 s is still within.
    const wave = (id: string) =>
      conditions.met('the store is unavailable', 'error', { err: failure }, id, { waitedMs: 1800 })
    wave('r-0')
    await sleep(250)
    wave('r-1')
    await sleep(250)
    wave('r-2')
    assert.equal(lines.length, 1, `one start, no end between the waves: ${JSON.stringify(lines)}`)
    const passed = await passedIn(lines)
    assert.equal(
      passed.msg,
      'the store is unavailable: passed, as far as requests tell: none met it for 2000 ms',
    )
    assert.equal(passed.failedRequests, 3)
    assert.ok(Number(passed.durationMs) >= 450, 'from the first wave to the last')
  })
})

describe('condition log: a wait counted only so far', () => {
  test('when a request met a condition after a very long time (a body trickled in for an hour), then the quiet period outlasts only the most of a wait that counts, and the condition still passes', async () => {
    const { lines, logger } = collectingLogger()
    const conditions = new ConditionLog(logger, { quietMs: 100, repeatMs: 60_000, waitCountedMs: 200 })
    conditions.met('the store is unavailable', 'error', { err: new Error('down') }, 'r-0', {
      waitedMs: 3_600_000,
    })
    const passed = await passedIn(lines)
    assert.equal(
      passed.msg,
      'the store is unavailable: passed, as far as requests tell: none met it for 300 ms',
    )
  })
})

describe('condition log: readiness', () => {
  test('when a readiness condition passes at a probe, then its line gives the time from its start to that probe', async () => {
    const { lines, logger } = collectingLogger()
    const conditions = new ConditionLog(logger)
    // One probe met it: the next, 200 ms later, found the service ready (a timer may fire a little early).
    conditions.met('not ready: the store cannot be reached', 'warn', { code: 'x' }, 'r-0', {
      untilReady: true,
    })
    await sleep(200)
    conditions.passed('/readyz answered ready')
    const passed = lines.find((line) => String(line.msg).includes('passed'))
    assert.ok(Number(passed?.durationMs) >= 150, JSON.stringify(passed))
  })
})

// Under CI this suite must run: a server named by URL cannot be stopped, so it always starts its own.
describe('logs during a PostgreSQL outage', throwawayPostgresSuiteOptions(), () => {
  test('when the database is down, then N failed requests write N request lines and one stack, and the end of the outage is logged', async (t) => {
    const postgres = await startThrowawayPostgres()
    t.after(() => postgres.stop('immediate'))
    const env = {
      DATABASE_URL: await postgres.createDatabase(),
      API_KEYS: `outage:${key}`,
      PG_CONNECT_TIMEOUT_MS: '1000',
      // Every request needs the database: no cached key lookups, no cached answers.
      API_KEY_CACHE_TTL_MS: '0',
      READ_CACHE_BYTES: '0',
    }
    const service = await startServeProcess(env, temporaryDirectory(t))
    t.after(() => service.child.kill('SIGKILL'))
    await conformanceAt(service.origin)
    assert.equal((await request(service, '/v1/pets')).status, 200)

    postgres.stop('immediate')
    const failed = 40
    for (let batch = 0; batch < failed / 8; batch++) {
      const statuses = await Promise.all(
        Array.from({ length: 8 }, async (_, i) => {
          const id = `outage-${batch * 8 + i}`
          return (await request(service, '/v1/pets', { headers: { 'x-request-id': id } })).status
        }),
      )
      assert.deepEqual(new Set(statuses), new Set([503]))
    }
    const requestLines = await waitForLog(service, (lines) => {
      const found = lines.filter((line) => line.msg === 'request' && String(line.reqId).startsWith('outage-'))
      return found.length === failed ? found : undefined
    })
    // The pool's warning for each idle connection the database dropped is not about requests.
    const stacks = logLines(service).filter(
      (line) => hasStack(line) && !/idle database connection/.test(String(line.msg)),
    )
    assert.equal(stacks.length, 1, `one stack:\n${stacks.map((line) => line.msg).join('\n')}`)
    assert.equal(stacks[0]?.level, 50)
    assert.equal(stacks[0]?.condition, 'the store is unavailable')
    assert.equal(logLines(service).filter((line) => line.msg === 'request failed').length, 0)
    for (const line of requestLines) {
      assert.equal(line.status, 503)
      assert.equal(line.condition, 'the store is unavailable', 'each request line names its condition')
      assert.equal(line.level, 30)
    }

    postgres.start()
    await answersOk(service, '/v1/pets', 'the service recovers once the database is back')
    const passed = await passedLine(service, 'the store is unavailable')
    assert.ok(Number(passed.failedRequests) >= failed, `counted: ${passed.failedRequests}`)
  })
})

describe('idle connections dropped together', throwawayPostgresSuiteOptions(), () => {
  test("when the database drops every idle connection at once (a restart, an operator's terminate), then one line says so at once and one how many more failed with it, not one per connection, and the next drop is said again", async (t) => {
    const postgres = await startThrowawayPostgres()
    t.after(() => postgres.stop('immediate'))
    const databaseUrl = await postgres.createDatabase()
    const env = {
      DATABASE_URL: databaseUrl,
      API_KEYS: `idle:${key}`,
      API_KEY_CACHE_TTL_MS: '0',
      READ_CACHE_BYTES: '0',
    }
    const service = await startServeProcess(env, temporaryDirectory(t))
    t.after(() => service.child.kill('SIGKILL'))
    const admin = new pg.Client({ connectionString: databaseUrl })
    await admin.connect()
    t.after(() => admin.end())
    const sessions = async () =>
      Number(
        (
          await admin.query(
            'SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()',
          )
        ).rows[0]?.count,
      )
    const said = (msg: string) => logLines(service).filter((line) => line.msg === msg)
    const dropped = () => said('an idle database connection failed; it will be replaced')
    const more = () => said('more idle database connections failed with it; they will be replaced')
    for (const round of [1, 2]) {
      // Several connections opened by reads at once, then left idle in the pool.
      await Promise.all(Array.from({ length: 8 }, () => request(service, '/v1/pets')))
      const open = await sessions()
      assert.ok(open >= 3, `${open} connections open`)
      await admin.query(
        'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()',
      )
      await waitFor(async () => ((await sessions()) === 0 ? true : undefined), 'sessions still there')
      const first = await waitForLog(service, () => (dropped().length === round ? dropped() : undefined))
      assert.match(String(first.at(-1)?.error), /terminat/)
      const counted = await waitForLog(service, () => (more().length === round ? more() : undefined))
      assert.equal(
        counted.at(-1)?.connections,
        open - 1,
        'every other dropped connection counted in one line',
      )
    }
    await sleep(1500)
    assert.deepEqual([dropped().length, more().length], [2, 2], 'two lines per drop, not one per connection')
  })
})

describe('readiness logs during a PostgreSQL outage', throwawayPostgresSuiteOptions(), () => {
  test('when the database is down, then probes, however spaced, write one warn line with the error, and one line when /readyz is ready again', async (t) => {
    const postgres = await startThrowawayPostgres()
    t.after(() => postgres.stop('immediate'))
    const env = { DATABASE_URL: await postgres.createDatabase(), API_KEYS: `outage:${key}` }
    const service = await startServeProcess(env, temporaryDirectory(t))
    t.after(() => service.child.kill('SIGKILL'))
    assert.equal((await request(service, '/readyz')).status, 200)

    postgres.stop('immediate')
    const probe = async () => assert.equal((await request(service, '/readyz')).status, 503)
    for (let i = 0; i < 10; i++) await probe()
    // Longer than the quiet that ends a condition of requests: a balancer probes every 5 to 30 s.
    await sleep(6000)
    for (let i = 0; i < 3; i++) await probe()
    // The pool's warning for each idle connection the database dropped is not about readiness.
    const warnings = () =>
      logLines(service).filter(
        (line) => Number(line.level) >= 40 && !/idle database connection/.test(String(line.msg)),
      )
    const started = warnings()
    assert.equal(started.length, 1, `one line for 13 probes:\n${JSON.stringify(started, null, 1)}`)
    assert.equal(started[0]?.level, 40)
    assert.equal(started[0]?.condition, 'not ready: the store cannot be reached')
    // Probes, not requests, meet it: requests may well be served meanwhile.
    assert.equal(
      started[0]?.msg,
      'not ready: the store cannot be reached: /readyz answers 503 until it passes',
    )
    assert.ok(hasStack(started[0] as LogLine), "the store's error, with its stack, once")

    postgres.start()
    await answersOk(service, '/readyz', 'ready once the database is back')
    const passed = await passedLine(service, 'not ready: the store cannot be reached')
    assert.equal(passed.msg, 'not ready: the store cannot be reached: passed (/readyz answered ready)')
    assert.ok(Number(passed.failedRequests) >= 13, `counted: ${passed.failedRequests}`)
    assert.equal(warnings().length, 2, 'nothing else')
  })
})
