import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { LOG_OUTPUT } from '../src/log/log-output-limits.ts'
import { exitAfterLogFlush } from '../src/log/logger.ts'

describe('the exit after the last log lines', () => {
  for (const withinMs of [100, 500, 5000]) {
    test(`when stdout takes nothing and the process must be gone within ${withinMs} ms, then it exits in time for the write at exit to have its own ${LOG_OUTPUT.exitWaitMs} ms, waiting a second at most`, (t) => {
      t.mock.timers.enable({ apis: ['setTimeout'] })
      const exit = t.mock.method(process, 'exit', () => undefined as never)
      // A stuck stdout: the flush never calls back.
      exitAfterLogFlush({ flush: () => {} }, 3, withinMs)
      const waitMs = Math.max(0, Math.min(withinMs - LOG_OUTPUT.exitWaitMs, 1000))
      if (waitMs > 0) t.mock.timers.tick(waitMs - 1)
      assert.equal(exit.mock.callCount(), 0, 'exited early')
      t.mock.timers.tick(waitMs > 0 ? 1 : 0)
      assert.deepEqual(
        exit.mock.calls.map((call) => call.arguments),
        [[3]],
      )
    })
  }

  test('when the last lines are written, then it exits at once with its code', (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] })
    const exit = t.mock.method(process, 'exit', () => undefined as never)
    exitAfterLogFlush({ flush: (done?: () => void) => done?.() }, 0, 5000)
    assert.deepEqual(
      exit.mock.calls.map((call) => call.arguments),
      [[0]],
    )
    t.mock.timers.tick(5000)
    assert.equal(exit.mock.callCount(), 1, 'and only once')
  })
})
