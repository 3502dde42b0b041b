import assert from 'node:assert/strict'
import { describe, type TestContext, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import Fastify from 'fastify'
import { runPeriodically } from '../src/periodic-job.ts'

/** Resolves when `signal` aborts. */
const aborted = (signal: AbortSignal) =>
  new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }))

async function waitFor(condition: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!condition()) {
    if (Date.now() > deadline) assert.fail(`${what} did not happen within ${timeoutMs} ms`)
    await sleep(5)
  }
}

/** An app whose log lines are kept, parsed, for the test to read; closed after it. */
function appKeepingItsLog(t: TestContext) {
  const lines: Array<Record<string, unknown>> = []
  const app = Fastify({
    logger: { level: 'info', stream: { write: (line: string) => void lines.push(JSON.parse(line)) } },
  })
  t.after(() => app.close())
  return { app, lines }
}

describe('periodic jobs', () => {
  test('when the app closes during a run of a job not meant for shutdown, then the run is told to stop, close waits for it, and it does not run again', async (t) => {
    const app = Fastify()
    t.after(() => app.close())
    let runs = 0
    let finished = false
    runPeriodically(app, 'long job', { everyMs: 60_000, atStart: true, atClose: false }, async (signal) => {
      runs++
      await aborted(signal)
      await sleep(20)
      finished = true
    })
    await app.ready()
    await waitFor(() => runs === 1, 'the run at start')
    await app.close()
    assert.equal(finished, true, 'close resolved only after the run stopped')
    assert.equal(runs, 1)
  })

  test('when a run outlasts the interval, then the next one waits: runs never overlap', async (t) => {
    const app = Fastify()
    t.after(() => app.close())
    let running = 0
    let most = 0
    let runs = 0
    runPeriodically(app, 'slow job', { everyMs: 5 }, async () => {
      running++
      most = Math.max(most, running)
      await sleep(40)
      running--
      runs++
    })
    await app.ready()
    await waitFor(() => runs >= 3, 'three runs')
    await app.close()
    assert.equal(most, 1)
  })

  test('when the app closes, then a job meant for shutdown runs once more after the run in progress', async (t) => {
    const app = Fastify()
    t.after(() => app.close())
    const runs: string[] = []
    runPeriodically(app, 'flush', { everyMs: 60_000, atStart: true }, async (signal) => {
      runs.push(signal.aborted ? 'aborted' : 'fresh')
      await sleep(20)
    })
    await app.ready()
    await app.close()
    assert.deepEqual(runs, ['fresh', 'fresh'], 'the last run gets a signal of its own, not the aborted one')
  })

  test('when the last run at close fails, then the job is told so in place of the usual warning, and close still resolves', async (t) => {
    const warnings: string[] = []
    const app = Fastify({
      logger: { level: 'warn', stream: { write: (line: string) => void warnings.push(line) } },
    })
    t.after(() => app.close())
    const told: unknown[] = []
    let runs = 0
    runPeriodically(
      app,
      'flush',
      { everyMs: 60_000, onLastRunFailed: (error) => told.push(error) },
      async () => {
        runs++
        throw new Error(`run ${runs} failed`)
      },
    )
    await app.ready()
    await app.close()
    assert.deepEqual(
      told.map((error) => (error as Error).message),
      ['run 1 failed'],
    )
    assert.deepEqual(warnings, [], 'no "periodic job failed" warning for the last run')
  })

  test('when a job keeps failing, then the first failure is logged with its error, the next ones are not, and its first success after them says how many failed', async (t) => {
    const { app, lines } = appKeepingItsLog(t)
    let runs = 0
    runPeriodically(app, 'flush', { everyMs: 5, atClose: false }, async () => {
      runs++
      if (runs <= 4) throw new Error('the store is unavailable')
      if (runs === 5) throw new Error('the store is read-only')
      // Errors taking turns, as an outage's often do: each said once.
      if (runs === 6) throw new Error('the store is unavailable')
    })
    await app.ready()
    await waitFor(() => runs >= 8, 'eight runs')
    await app.close()
    const said = lines.filter((line) => line.job === 'flush')
    assert.deepEqual(
      said.map((line) => [line.level, line.msg, line.failedRuns]),
      [
        [40, 'periodic job failed; retried at every run, and said again once it succeeds', undefined],
        [40, 'periodic job failed; retried at every run, and said again once it succeeds', undefined],
        [40, 'periodic job succeeded again', 6],
      ],
    )
    assert.equal(
      (said[1]?.err as { message?: string } | undefined)?.message,
      'the store is read-only',
      'a new error is said',
    )
    assert.equal((said[0]?.err as { message?: string } | undefined)?.message, 'the store is unavailable')
  })

  test('when a job keeps failing with a new message every run (an address, a count in it), then at most 8 are said and one line says the rest are not, so an outage of days neither floods the log nor grows memory', async (t) => {
    const { app, lines } = appKeepingItsLog(t)
    let runs = 0
    runPeriodically(app, 'flush', { everyMs: 2, atClose: false }, async () => {
      runs++
      if (runs <= 40) throw new Error(`connect ECONNREFUSED 10.0.0.${runs}:5432`)
    })
    await app.ready()
    await waitFor(() => runs >= 42, 'forty-two runs')
    await app.close()
    const said = lines.filter((line) => line.job === 'flush').map((line) => [line.msg, line.failedRuns])
    const failed = ['periodic job failed; retried at every run, and said again once it succeeds', undefined]
    assert.deepEqual(said, [
      ...Array.from({ length: 8 }, () => failed),
      ['periodic job keeps failing with other errors, not said until it succeeds', undefined],
      ['periodic job succeeded again', 40],
    ])
  })
})
