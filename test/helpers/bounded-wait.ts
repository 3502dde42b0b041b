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
  options: { timeoutMs?: number; everyMs?: number } = {},
): Promise<void> {
  await waitFor(async () => ((await condition()) ? true : undefined), what, options)
}

/**
 * Polls `found` every `everyMs` until it gives something other than undefined, and resolves with it;
 * fails with `what` (made when it fails) once `timeoutMs` have passed.
 */
export async function waitFor<T>(
  found: () => T | undefined | Promise<T | undefined>,
  what: string | (() => string),
  { timeoutMs = 10_000, everyMs = 10 }: { timeoutMs?: number; everyMs?: number } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const result = await found()
    if (result !== undefined) return result
    if (Date.now() > deadline) {
      assert.fail(`${typeof what === 'string' ? what : what()} (not within ${timeoutMs} ms)`)
    }
    await sleep(everyMs)
  }
}
