import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { closeSync, constants, openSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, type TestContext, test } from 'node:test'
import { BufferedLogOutput } from '../src/log/log-output.ts'
import { LOG_OUTPUT } from '../src/log/log-output-limits.ts'
import { createLogger, droppedLinesReport } from '../src/log/logger.ts'
import { droppedLogLines, unreportedDrops } from '../src/log/standard-streams.ts'
import { waitUntil, within } from './helpers/bounded-wait.ts'
import { outputFile, temporaryDirectory } from './helpers/cleanup.ts'
import { readAvailable } from './helpers/pipe-reads.ts'

// Each test makes a report of its own, which counts from zero every line this process dropped so far.

/** Resolves once everything the output took is written. */
function flushed(output: BufferedLogOutput): Promise<void> {
  return within(new Promise<void>((resolve) => output.flush(resolve)), 5000, 'the flush never finished')
}

/** The `droppedLines` of every report in `text`, a log's lines. */
function reported(text: string): number[] {
  return text
    .split('\n')
    .filter((line) => line.includes('"droppedLines"'))
    .map((line) => JSON.parse(line).droppedLines)
}

/** A pipe nobody reads until the test does: the output's end and the test's. */
function unreadPipe(t: TestContext): { reader: number; writer: number } {
  const fifo = join(temporaryDirectory(t), 'stdout')
  execFileSync('mkfifo', [fifo])
  const reader = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK)
  const writer = openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK)
  t.after(() => {
    closeSync(writer)
    closeSync(reader)
  })
  return { reader, writer }
}

describe('reports of dropped lines', () => {
  test('when a line waiting to be made is dropped as a report is written, then the report is not taken for dropped and no line is counted twice', async (t) => {
    const { path, fd } = outputFile(t)
    const output = new BufferedLogOutput({ fd })
    const report = droppedLinesReport(createLogger({ level: 'info' }, false, output), output)
    const broken = () => {
      throw new Error('a maker with a bug')
    }
    // One line lost before the report, and one waiting to be made (lost as it is) when the report comes.
    output.writeLater(broken, 1)
    await flushed(output)
    output.writeLater(broken, 2)
    report()
    report()
    await flushed(output)
    const said = reported(readFileSync(path, 'utf8'))
    assert.equal(
      said.reduce((sum, lines) => sum + lines, 0),
      droppedLogLines('stdout'),
      `reports said ${JSON.stringify(said)}`,
    )
  })

  test('when a report is itself dropped (stdout still full), then the next one that gets through counts every line since the last one taken', async (t) => {
    const { reader, writer } = unreadPipe(t)
    const output = new BufferedLogOutput({ fd: writer })
    const report = droppedLinesReport(createLogger({ level: 'info' }, false, output), output)
    // Short lines until one is dropped: the buffer is then too full for a report's line.
    const before = droppedLogLines('stdout')
    // Lines an earlier test's report said: no report says them again.
    const saidBefore = before - unreportedDrops('stdout')
    // Bounded: an output that never drops (a lost count) fails here instead of spinning past every timeout.
    const most = LOG_OUTPUT.maxBufferedBytes / 10 + 10_000
    for (let written = 0; droppedLogLines('stdout') === before; written++) {
      assert.ok(written < most, `no line dropped after ${most} lines into a full stdout`)
      output.write('123456789\n')
    }
    report()
    const unsaid = droppedLogLines('stdout')
    assert.equal(unsaid, before + 2, 'the report was dropped too')

    // Read again, until everything buffered is written.
    let done = false
    output.flush(() => {
      done = true
    })
    let read = ''
    await waitUntil(
      () => {
        read += readAvailable(reader)
        return done
      },
      'the buffered lines were never all written',
      { timeoutMs: 10_000, everyMs: 5 },
    )
    read += readAvailable(reader)
    assert.deepEqual(reported(read), [], 'no report got through while stdout was full')
    report()
    await flushed(output)
    assert.deepEqual(reported(readAvailable(reader)), [unsaid - saidBefore])
  })
})
