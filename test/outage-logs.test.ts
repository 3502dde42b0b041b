import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import pino from 'pino'
import { generateApiKey } from '../src/auth/api-key.ts'
import { ConditionLog } from '../src/http/condition-log.ts'
import { temporaryDirectory } from './helpers/cleanup.ts'
import { type LogLine, logLines, requesterFor, startServeProcess, waitForLog } from './helpers/cli-process.ts'
import { conformanceAt } from './helpers/conformance-fetch.ts'
import { startThrowawayPostgres, throwawayPostgresSuiteOptions } from './helpers/postgres-server.ts'

const key = generateApiKey()
const request = requesterFor(key)
const hasStack = (line: LogLine) => typeof (line.err as { stack?: unknown } | undefined)?.stack === 'string'

/** Polls `lines` until `found` returns something; fails after `timeoutMs`. */
async function waitForLines<T>(lines: LogLine[], found: (all: LogLine[]) => T | undefined, timeoutMs = 5000) {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const result = found(lines)
    if (result !== undefined) return result
    if (Date.now() > deadline) assert.fail(`not logged within ${timeoutMs} ms: ${JSON.stringify(lines)}`)
    await sleep(10)
  }
}

describe('condition log', () => {
  test('when requests keep meeting a condition, then it is logged when it starts (with the error), at most once per repeat interval while it lasts, and once when it has passed', async () => {
    const lines: LogLine[] = []
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) })
    // Quiet long enough that a loaded machine's late timer cannot end the condition before the test's 150 ms.
    const conditions = new ConditionLog(logger, { quietMs: 2000, repeatMs: 100 })
    const failure = new Error('connection refused')
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
    assert.equal(still.error, 'connection refused', 'the latest error, in one line')
    const passed = await waitForLines(
      lines,
      (all) => all.find((line) => String(line.msg).includes('passed')),
      10_000,
    )
    assert.equal(passed.failedRequests, 6)
    assert.equal(passed.level, 40)
    assert.equal(lines.length, 3)
    conditions.met('the store is unavailable', 'error', { err: failure }, 'r-6')
    assert.equal(lines.length, 4, 'met again after it passed: a new start, with the error')
    assert.ok(hasStack(lines[3] as LogLine))
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
      (line) => hasStack(line) && line.msg !== 'an idle database connection failed; it will be replaced',
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
    let recovered = false
    for (let attempt = 0; attempt < 40 && !recovered; attempt++) {
      recovered = (await request(service, '/v1/pets')).status === 200
      if (!recovered) await sleep(250)
    }
    assert.ok(recovered, 'the service recovers once the database is back')
    const passed = await waitForLog(service, (lines) =>
      lines.find(
        (line) => line.condition === 'the store is unavailable' && String(line.msg).includes('passed'),
      ),
    )
    assert.ok(Number(passed.failedRequests) >= failed, `counted: ${passed.failedRequests}`)
  })
})
