import { closeSync, mkdtempSync, openSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, type TestContext } from 'node:test'

/** Where cleanups go: a test's context, or `suiteCleanup()` for a whole `describe` block. */
export type Cleanup = Pick<TestContext, 'after'>

/**
 * Cleanups for resources shared by a whole `describe` block: call it in the block's body (not in a hook),
 * and the collected cleanups run, last first, when the block ends.
 */
export function suiteCleanup(): Cleanup {
  const cleanups: Array<() => unknown> = []
  after(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup()
  })
  return { after: (fn: () => unknown) => void cleanups.push(fn) } as Cleanup
}

/** A fresh temporary directory, removed after the test. */
export function temporaryDirectory(t: Cleanup): string {
  const directory = mkdtempSync(join(tmpdir(), 'petstore-test-'))
  t.after(() => rmSync(directory, { recursive: true, force: true }))
  return directory
}

/**
 * A file for an output to write to, in a fresh temporary directory: its path, and its descriptor, closed
 * after the test.
 */
export function outputFile(t: Cleanup): { path: string; fd: number } {
  const path = join(temporaryDirectory(t), 'out.log')
  const fd = openSync(path, 'w')
  t.after(() => closeSync(fd))
  return { path, fd }
}
