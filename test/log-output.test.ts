import assert from 'node:assert/strict'
import { closeSync, openSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { BufferedLogOutput, LOG_OUTPUT } from '../src/log/log-output.ts'
import { within } from './helpers/bounded-wait.ts'
import { temporaryDirectory } from './helpers/cleanup.ts'

/** Lines of every shape a log holds: short, multi-byte, and longer than a whole write. */
function mixedLines(count: number): string[] {
  return Array.from({ length: count }, (_, i) => {
    if (i % 97 === 0) return `{"n":${i},"stack":"${'x'.repeat(LOG_OUTPUT.maxWriteBytes + i)}"}\n`
    if (i % 13 === 0) return `{"n":${i},"name":"Rex ü 🐕 ${'é'.repeat(i % 50)}"}\n`
    return `{"n":${i},"msg":"request","url":"/v1/pets/${i}"}\n`
  })
}

describe('buffered log output', () => {
  for (const shared of [false, true]) {
    test(`when lines of every size are written (${shared ? 'shared' : 'alone'} on stdout), then after a flush the file holds each whole, in order`, async (t) => {
      const path = join(temporaryDirectory(t), 'out.log')
      const fd = openSync(path, 'w')
      t.after(() => closeSync(fd))
      const output = new BufferedLogOutput({ shared, fd })
      const lines = mixedLines(3000)
      // A few lines per turn, as requests end, so writes overlap with new lines.
      for (let i = 0; i < lines.length; i += 7) {
        for (const line of lines.slice(i, i + 7)) output.write(line)
        await new Promise((resolve) => setImmediate(resolve))
      }
      await within(new Promise<void>((resolve) => output.flush(resolve)), 5000, 'the flush never finished')
      assert.equal(readFileSync(path, 'utf8'), lines.join(''))
    })
  }

  test('when a long line comes first, then it is written, and so are the lines after it', async (t) => {
    const path = join(temporaryDirectory(t), 'out.log')
    const fd = openSync(path, 'w')
    t.after(() => closeSync(fd))
    const output = new BufferedLogOutput({ shared: true, fd })
    const lines = [`${'y'.repeat(10_000)}\n`, 'short\n']
    for (const line of lines) output.write(line)
    await within(new Promise<void>((resolve) => output.flush(resolve)), 5000, 'the flush never finished')
    assert.equal(readFileSync(path, 'utf8'), lines.join(''))
  })

  test('when the process exits with lines buffered, then they are written synchronously', (t) => {
    const path = join(temporaryDirectory(t), 'out.log')
    const fd = openSync(path, 'w')
    t.after(() => closeSync(fd))
    const output = new BufferedLogOutput({ fd })
    // Less than a batch, so no write has started: the exit's own write is the one that takes them.
    const lines = mixedLines(300).filter((line) => line.length < 200)
    for (const line of lines) output.write(line)
    output.flushSync()
    assert.equal(readFileSync(path, 'utf8'), lines.join(''))
  })
})
