import assert from 'node:assert/strict'
import { PassThrough } from 'node:stream'
import { describe, test } from 'node:test'
import { setImmediate as turn } from 'node:timers/promises'
import {
  takeWorkerLogFd,
  WORKER_ENV,
  WORKER_LOG_FD,
  WorkerOutputRelay,
} from '../src/cli/supervisor/worker-stdio.ts'

/** Where the relay's lines go, recorded one call at a time. */
function recorder() {
  const lines: string[] = []
  return { lines, sink: { write: (line: string) => lines.push(line) > 0 } }
}

describe("workers' output relayed to the supervisor's stderr", () => {
  test('when a worker writes lines in pieces on stdout and stderr, then each is passed on whole, a character split between reads included, and a last line without its newline is ended', async () => {
    const stdout = new PassThrough()
    const stderr = new PassThrough()
    const { lines, sink } = recorder()
    const relayed = new WorkerOutputRelay(sink).follow({ stdout, stderr })
    const euro = Buffer.from('€')
    stderr.write('ab')
    stdout.write('out 1\nout')
    stderr.write(Buffer.concat([Buffer.from('c\nd'), euro.subarray(0, 1)]))
    await turn()
    stderr.write(Buffer.concat([euro.subarray(1), Buffer.from('f\ngh')]))
    stdout.write(' 2\n')
    await turn()
    stderr.end('i')
    stdout.end()
    await relayed
    assert.deepEqual([...lines].sort(), ['abc\n', 'd€f\n', 'ghi\n', 'out 1\n', 'out 2\n'])
  })

  test('when a worker writes a long run without a newline, then it is not held whole but passed on in lines of at most 4 KiB (PIPE_BUF)', async () => {
    const stderr = new PassThrough()
    const { lines, sink } = recorder()
    const relayed = new WorkerOutputRelay(sink).follow({ stdout: null, stderr })
    const text = 'x'.repeat(40 * 1024)
    for (let at = 0; at < text.length; at += 1024) {
      stderr.write(text.slice(at, at + 1024))
      await turn()
    }
    stderr.end()
    await relayed
    assert.deepEqual(
      lines.map((line) => line.length),
      [...Array.from({ length: 10 }, () => 4096), 40 * 1024 - 10 * 4095 + 1],
    )
    assert.equal(lines.join('').replaceAll('\n', ''), text)
  })

  test('when a worker writes a line over 4 KiB in one piece, then it is passed on in pieces of at most 4 KiB, never inside a character', async () => {
    const stderr = new PassThrough()
    const { lines, sink } = recorder()
    const relayed = new WorkerOutputRelay(sink).follow({ stdout: null, stderr })
    // An emoji (four bytes, two UTF-16 units) across the 4 KiB boundary; then euros, three bytes each.
    const emoji = `${'z'.repeat(4094)}😀${'z'.repeat(100)}`
    const euros = '€'.repeat(3000)
    stderr.end(`${emoji}\n${euros}\nnext\n`)
    await relayed
    const bytes = lines.map((line) => Buffer.byteLength(line))
    assert.deepEqual(bytes, [4095, 105, 4096, 4096, 811, 5])
    assert.equal(
      lines.join(''),
      `${'z'.repeat(4094)}\n😀${'z'.repeat(100)}\n${euros.slice(0, 1365)}\n${euros.slice(1365, 2730)}\n${euros.slice(2730)}\nnext\n`,
    )
  })

  for (const { what, text, bytes } of [
    { what: '4095 ASCII bytes', text: 'a'.repeat(4095), bytes: [4096] },
    { what: '4096 ASCII bytes', text: 'a'.repeat(4096), bytes: [4096, 2] },
    { what: 'an emoji three bytes short of the cut', text: `${'z'.repeat(4092)}😀z`, bytes: [4093, 6] },
    { what: 'euros two bytes short of the cut', text: `z${'€'.repeat(1400)}`, bytes: [4094, 109] },
    { what: 'two-byte letters', text: 'é'.repeat(2100), bytes: [4095, 107] },
  ]) {
    test(`when a worker writes ${what} in a line, then no piece passed on is over 4 KiB or cuts a character`, async () => {
      const stderr = new PassThrough()
      const { lines, sink } = recorder()
      const relayed = new WorkerOutputRelay(sink).follow({ stdout: null, stderr })
      stderr.end(`${text}\n`)
      await relayed
      assert.deepEqual(
        lines.map((line) => Buffer.byteLength(line)),
        bytes,
      )
      assert.equal(lines.join('').replaceAll('\n', ''), text)
    })
  }

  test('when a worker takes its log descriptor, then the environment no longer holds it, for nothing it starts to inherit', () => {
    Object.assign(process.env, WORKER_ENV)
    assert.equal(takeWorkerLogFd(), WORKER_LOG_FD)
    assert.equal(Object.keys(WORKER_ENV).filter((name) => name in process.env).length, 0)
    assert.equal(takeWorkerLogFd(), undefined, 'taken once')
  })
})
