import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, type TestContext, test } from 'node:test'
import pino from 'pino'
import { LATER_LINES } from '../src/log/later-lines.ts'
import { BufferedLogOutput } from '../src/log/log-output.ts'
import { LOG_OUTPUT } from '../src/log/log-output-limits.ts'
import { droppedLogLines } from '../src/log/standard-streams.ts'
import { waitUntil, within } from './helpers/bounded-wait.ts'
import { outputFile } from './helpers/cleanup.ts'

/** Resolves once everything the output took is written. */
function flushed(output: BufferedLogOutput): Promise<void> {
  return within(new Promise<void>((resolve) => output.flush(resolve)), 5000, 'the flush never finished')
}

describe('lines made later', () => {
  /** An output to a file, and a maker writing `{"n":…}` for each number, noting what it made. */
  function laterOutput(t: TestContext) {
    const { path, fd } = outputFile(t)
    const output = new BufferedLogOutput({ fd })
    const made: number[] = []
    const make = (n: number) => {
      made.push(n)
      output.writeAscii(`{"n":${n}}\n`)
    }
    const linesOf = (numbers: number[]) => numbers.map((n) => `{"n":${n}}\n`).join('')
    return { path, output, made, make, linesOf }
  }

  test('when lines are taken to be made later, then none is made until enough wait, and then all of them, in the order taken', async (t) => {
    const { path, output, made, make, linesOf } = laterOutput(t)
    const numbers = Array.from({ length: LATER_LINES }, (_, n) => n)
    for (const n of numbers.slice(0, -1)) output.writeLater(make, n)
    assert.deepEqual(made, [])
    output.writeLater(make, numbers.length - 1)
    assert.deepEqual(made, numbers)
    await flushed(output)
    assert.equal(readFileSync(path, 'utf8'), linesOf(numbers))
  })

  test('when a line is written while others wait to be made, then they are made and written before it', async (t) => {
    const { path, output, make, linesOf } = laterOutput(t)
    output.writeLater(make, 1)
    output.writeLater(make, 2)
    output.write('{"msg":"warning"}\n')
    output.writeLater(make, 3)
    output.writeAscii('{"msg":"ascii"}\n')
    await flushed(output)
    assert.equal(
      readFileSync(path, 'utf8'),
      `${linesOf([1, 2])}{"msg":"warning"}\n${linesOf([3])}{"msg":"ascii"}\n`,
    )
  })

  test('when a few lines wait to be made and nothing else comes, then they are written within the interval', async (t) => {
    const { path, output, make, linesOf } = laterOutput(t)
    for (const n of [1, 2, 3]) output.writeLater(make, n)
    await waitUntil(
      () => readFileSync(path, 'utf8') === linesOf([1, 2, 3]),
      'the lines were not written within the interval',
      { timeoutMs: LOG_OUTPUT.flushIntervalMs * 6 },
    )
  })

  test('when lines wait to be made at a flush or at exit, then they are made and written', async (t) => {
    const { path, output, make, linesOf } = laterOutput(t)
    for (const n of [1, 2]) output.writeLater(make, n)
    await flushed(output)
    assert.equal(readFileSync(path, 'utf8'), linesOf([1, 2]))
    for (const n of [3, 4]) output.writeLater(make, n)
    output.writeAtExit()
    assert.equal(readFileSync(path, 'utf8'), linesOf([1, 2, 3, 4]))
  })

  test('when makers throw, then each of their lines is counted as dropped, one error line says so, and the lines after them are still made', async (t) => {
    const { path, output, make, linesOf } = laterOutput(t)
    const before = droppedLogLines()
    const broken = () => {
      throw new Error('a maker with a bug')
    }
    output.writeLater(make, 1)
    output.writeLater(broken, 2)
    output.writeLater(make, 3)
    await flushed(output)
    output.writeLater(broken, 4)
    output.writeLater(make, 5)
    await flushed(output)
    const [first, report, third, ...rest] = readFileSync(path, 'utf8').split(/(?<=\n)/)
    assert.deepEqual([first, third, ...rest], [linesOf([1]), linesOf([3]), linesOf([5])])
    assert.deepEqual(
      { ...JSON.parse(report ?? '{}'), time: 0 },
      {
        level: 50,
        time: 0,
        error: 'Error',
        msg: 'a log line could not be made: it and any other such line are counted as dropped',
      },
    )
    assert.equal(droppedLogLines() - before, 2)
  })
})

describe('lines made later, then an exit or a fatal line', () => {
  // Request lines of about 640 bytes: 6 of them are more than a shared stdout's batch, 63 more than a
  // batch of a process alone on its stdout.
  const requestLine = (n: number) => `{"n":${n},"msg":"request","url":"/v1/pets/${'9'.repeat(600)}"}\n`

  for (const shared of [false, true]) {
    test(`when more lines wait to be made than a batch holds and the process exits (${shared ? 'shared' : 'alone'} on stdout), then every one is written and none counted as dropped`, (t) => {
      const { path, fd } = outputFile(t)
      const output = new BufferedLogOutput({ shared, fd })
      const make = (n: number) => output.writeAscii(requestLine(n))
      const count = LATER_LINES - 1
      const before = droppedLogLines()
      for (let n = 0; n < count; n++) output.writeLater(make, n)
      output.write('{"level":50,"msg":"shutdown did not finish in time"}\n')
      output.writeAtExit()
      assert.equal(droppedLogLines() - before, 0, 'lines counted as dropped')
      const lines = Array.from({ length: count }, (_, n) => requestLine(n))
      assert.equal(
        readFileSync(path, 'utf8'),
        `${lines.join('')}{"level":50,"msg":"shutdown did not finish in time"}\n`,
      )
    })
  }

  test('when pino writes a fatal line while a write is under way, then it and the lines after it are written once that write ends, none counted as dropped', async (t) => {
    const { path, fd } = outputFile(t)
    const output = new BufferedLogOutput({ fd })
    const logger = pino({ level: 'info', base: null, timestamp: false }, output)
    const before = droppedLogLines()
    const lines = Array.from({ length: 5 }, (_, n) => requestLine(n))
    for (const line of lines) output.writeAscii(line)
    output.flush()
    logger.fatal('boom')
    output.write('{"after":1}\n')
    await flushed(output)
    assert.equal(droppedLogLines() - before, 0, 'lines counted as dropped')
    assert.equal(readFileSync(path, 'utf8'), `${lines.join('')}{"level":60,"msg":"boom"}\n{"after":1}\n`)
  })

  test('when pino writes a fatal line while request lines wait to be made (shared stdout), then the request lines and the fatal line are written, none counted as dropped', async (t) => {
    const { path, fd } = outputFile(t)
    const output = new BufferedLogOutput({ shared: true, fd })
    const logger = pino({ level: 'info', base: null, timestamp: false }, output)
    const make = (n: number) => output.writeAscii(requestLine(n))
    const before = droppedLogLines()
    for (let n = 0; n < 20; n++) output.writeLater(make, n)
    logger.fatal('boom')
    await flushed(output)
    const lines = Array.from({ length: 20 }, (_, n) => requestLine(n))
    assert.equal(readFileSync(path, 'utf8'), `${lines.join('')}{"level":60,"msg":"boom"}\n`)
    assert.equal(droppedLogLines() - before, 0)
  })
})
