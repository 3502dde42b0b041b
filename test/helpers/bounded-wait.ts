import assert from 'node:assert/strict'
import { setTimeout as sleep } from 'node:timers/promises'

/**
 * Resolves with what `promise` resolves to, or fails with `what` (made when it fails, so it can tell the
 * state then) once `ms` have passed: a promise that never settles makes the test fail in seconds, with a
 * message, instead of hanging the run.
 */
export async function within<T>(promise: Promise<T>, ms: number, what: string | (() => string)): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const message = `${typeof what === 'string' ? what : what()} (not within ${ms} ms)`
      reject(new assert.AssertionError({ message }))
    }, ms)
  })
  try {
    return await Promise.race([promise, expired])
  } finally {
    clearTimeout(timer)
  }
}

/**
 * Polls `condition` every `everyMs` until it holds; fails with `what` (made when it fails, so it can tell
 * the state then) once `timeoutMs` have passed.
 */
export async function waitUntil(
  condition: () => boolean | Promise<boolean>,
  what: string | (() => string),
  { timeoutMs = 10_000, everyMs = 10 }: { timeoutMs?: number; everyMs?: number } = {},
): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await condition())) {
    if (Date.now() > deadline) {
      assert.fail(`${typeof what === 'string' ? what : what()} (not within ${timeoutMs} ms)`)
    }
    await sleep(everyMs)
  }
}
