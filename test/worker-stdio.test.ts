import assert from 'node:assert/strict'
import { PassThrough, Writable } from 'node:stream'
import { describe, test } from 'node:test'
import { setImmediate as turn } from 'node:timers/promises'
import { WorkerOutputRelay } from '../src/cli/supervisor/worker-stdio.ts'

/** A stderr that records each write, and, while `stuck`, takes none: its backlog grows as a full socket's. */
function stderrStandIn() {
  const writes: string[] = []
  let held: (() => void) | undefined
  const state = { stuck: false }
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      writes.push(chunk.toString())
      if (state.stuck) held = done
      else process.nextTick(done)
    },
  })
  const release = () => {
    state.stuck = false
    held?.()
  }
  return { stream, writes, state, release }
}

describe("workers' output relayed to the supervisor's stderr", () => {
  test('when a worker writes lines in pieces on stdout and stderr, then each write passed on holds whole lines, and a last line without its newline is ended', async () => {
    const stdout = new PassThrough()
    const stderr = new PassThrough()
    const to = stderrStandIn()
    const relayed = new WorkerOutputRelay(to.stream).follow({ stdout, stderr })
    stderr.write('ab')
    stdout.write('out 1\nout')
    stderr.write('c\nde')
    stderr.write('f\ngh')
    stdout.write(' 2\n')
    await turn()
    stderr.end('i')
    stdout.end()
    await relayed
    assert.ok(
      to.writes.every((text) => text.endsWith('\n')),
      `a write with part of a line: ${JSON.stringify(to.writes)}`,
    )
    assert.deepEqual(to.writes.join('').split('\n').slice(0, -1).sort(), [
      'abc',
      'def',
      'ghi',
      'out 1',
      'out 2',
    ])
  })

  test('when a worker writes a long run without a newline, then it is passed on as lines of at most 16 Ki characters', async () => {
    const stderr = new PassThrough()
    const to = stderrStandIn()
    const relayed = new WorkerOutputRelay(to.stream).follow({ stdout: null, stderr })
    const text = 'x'.repeat(40 * 1024)
    for (let at = 0; at < text.length; at += 1000) stderr.write(text.slice(at, at + 1000))
    stderr.end()
    await relayed
    const lines = to.writes.join('').split('\n').slice(0, -1)
    assert.equal(lines.join(''), text)
    assert.ok(lines.length >= 3 && lines.every((line) => line.length <= 17 * 1024), `${lines.length} lines`)
  })

  test("when the supervisor's stderr holds back over 1 MiB, then further lines are dropped, and counted in a line once it takes lines again", async () => {
    const stderr = new PassThrough()
    const to = stderrStandIn()
    to.state.stuck = true
    const relayed = new WorkerOutputRelay(to.stream).follow({ stdout: null, stderr })
    const line = `${'y'.repeat(1023)}\n`
    for (let i = 0; i < 1500; i++) {
      stderr.write(line)
      await turn()
    }
    const held = to.stream.writableLength
    assert.ok(held > 1024 * 1024 && held <= 1024 * 1024 + 2 * line.length, `${held} bytes held back`)
    const accepted = held / line.length
    to.release()
    await turn()
    assert.equal(to.stream.writableLength, 0)
    stderr.end('last\n')
    await relayed
    const text = to.writes.join('')
    const lines = text.split('\n').slice(0, -1)
    assert.equal(lines.filter((each) => each === line.slice(0, -1)).length, accepted)
    const report = JSON.parse(lines.at(-2) ?? '{}')
    assert.equal(report.droppedLines, 1500 - accepted)
    assert.equal(report.level, 40)
    assert.equal(lines.at(-1), 'last')
  })

  test("when the supervisor's stderr is gone (EPIPE), then workers' lines are dropped and the supervisor goes on", async () => {
    const stderr = new PassThrough()
    const gone = new Writable({
      write(_chunk, _encoding, done) {
        done(Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }))
      },
    })
    const relay = new WorkerOutputRelay(gone)
    const ended = relay.follow({ stdout: null, stderr })
    stderr.write('first\n')
    await turn()
    assert.ok(gone.destroyed, 'the write did not fail')
    stderr.end('second\n')
    await ended
  })
})
