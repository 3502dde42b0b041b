import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import fs, { readdirSync, readFileSync } from 'node:fs'
import { syncBuiltinESMExports } from 'node:module'
import { join } from 'node:path'
import { describe, type TestContext, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import pino from 'pino'
import { BufferedLogOutput } from '../src/log/log-output.ts'
import { LOG_OUTPUT } from '../src/log/log-output-limits.ts'
import { droppedLogLines } from '../src/log/standard-streams.ts'
import { waitUntil, within } from './helpers/bounded-wait.ts'
import { outputFile, temporaryDirectory } from './helpers/cleanup.ts'
import { fillFileSystem, mountingSuiteOptions, mountTmpfs } from './helpers/storage-faults.ts'
import { straceSuiteOptions } from './helpers/strace.ts'
import { suiteNeedingPrlimit } from './helpers/suite-requirements.ts'

/** Lines of every shape a log holds: short, multi-byte, and longer than a whole write. */
function mixedLines(count: number): string[] {
  return Array.from({ length: count }, (_, i) => {
    if (i % 97 === 0) return `{"n":${i},"stack":"${'x'.repeat(LOG_OUTPUT.maxWriteBytes + i)}"}\n`
    if (i % 13 === 0) return `{"n":${i},"name":"Rex ü 🐕 ${'é'.repeat(i % 50)}"}\n`
    return `{"n":${i},"msg":"request","url":"/v1/pets/${i}"}\n`
  })
}

/** Takes a line as the request line does: copied if it is all ASCII, encoded if not. */
function take(output: BufferedLogOutput, line: string): void {
  if (/^[\x20-\x7e\n]*$/.test(line)) output.writeAscii(line)
  else output.write(line)
}

/** Resolves once everything the output took is written. */
function flushed(output: BufferedLogOutput): Promise<void> {
  return within(new Promise<void>((resolve) => output.flush(resolve)), 5000, 'the flush never finished')
}

describe('buffered log output', () => {
  for (const shared of [false, true]) {
    test(`when lines of every size are written, ASCII ones copied (${shared ? 'shared' : 'alone'} on stdout), then after a flush the file holds each whole, in order`, async (t) => {
      const { path, fd } = outputFile(t)
      const output = new BufferedLogOutput({ shared, fd })
      const lines = mixedLines(3000)
      // A few lines per turn, as requests end, so writes overlap with new lines.
      for (let i = 0; i < lines.length; i += 7) {
        for (const line of lines.slice(i, i + 7)) take(output, line)
        await new Promise((resolve) => setImmediate(resolve))
      }
      await flushed(output)
      assert.equal(readFileSync(path, 'utf8'), lines.join(''))
    })
  }

  test("when a line holds DEL, C1 controls or line separators (a client's user agent), then they are written escaped, the same JSON values", async (t) => {
    const { path, fd } = outputFile(t)
    const output = new BufferedLogOutput({ shared: false, fd })
    // U+009B is CSI, a terminal escape in one character; U+2028 and U+2029 end lines in some readers.
    const agent = 'curl \u009b31m red \u0085 next \u2028 \u2029 é \u007f'
    pino({ base: null, timestamp: false }, output).info({ userAgent: agent }, 'request')
    await flushed(output)
    const written = readFileSync(path, 'utf8')
    assert.doesNotMatch(written, /[\u007f-\u009f\u2028\u2029]/)
    assert.equal(JSON.parse(written).userAgent, agent)
  })

  test('when a line alone is taken, far from filling a batch, then it is held until the next flush, half a second on, and written then', async (t) => {
    // The interval's clock is the test's: the half second passes when the test says so.
    t.mock.timers.enable({ apis: ['setInterval'] })
    const { path, fd } = outputFile(t)
    const output = new BufferedLogOutput({ fd })
    output.writeAscii('{"msg":"request"}\n')
    t.mock.timers.tick(499)
    await new Promise((resolve) => setTimeout(resolve, 50))
    assert.equal(readFileSync(path, 'utf8'), '', 'held until the flush')
    t.mock.timers.tick(1)
    await waitUntil(() => readFileSync(path, 'utf8') === '{"msg":"request"}\n', 'the line was not written')
  })

  test('when a long line comes first, then it is written, and so are the lines after it', async (t) => {
    const { path, fd } = outputFile(t)
    const output = new BufferedLogOutput({ shared: true, fd })
    const lines = [`${'y'.repeat(10_000)}\n`, 'short\n', `${'z'.repeat(10_000)}\n`, 'é\n']
    for (const line of lines) take(output, line)
    await flushed(output)
    assert.equal(readFileSync(path, 'utf8'), lines.join(''))
  })

  test('when the process exits with lines buffered, then they are written synchronously', (t) => {
    const { path, fd } = outputFile(t)
    const output = new BufferedLogOutput({ fd })
    // Less than a batch, so no write has started: the exit's own write is the one that takes them.
    const lines = mixedLines(300).filter((line) => line.length < 200)
    for (const line of lines) output.write(line)
    output.writeAtExit()
    assert.equal(readFileSync(path, 'utf8'), lines.join(''))
  })

  test('when the exit comes while a write that starts in the middle of a line is in the thread pool, then the line it starts in and all after it are counted as dropped, not those written before', async (t) => {
    const { fd } = outputFile(t)
    // The first write takes a line and a half, the rest stays in the thread pool, never run.
    const realWrite = fs.write
    let writes = 0
    fs.write = ((...args: unknown[]) => {
      const done = args.at(-1) as (error: null, written: number) => void
      if (++writes === 1) setImmediate(() => done(null, 150))
    }) as typeof fs.write
    syncBuiltinESMExports()
    t.after(() => {
      fs.write = realWrite
      syncBuiltinESMExports()
    })
    const output = new BufferedLogOutput({ fd })
    for (let n = 0; n < 10; n++) output.write(`${String(n).padEnd(99, '.')}\n`)
    output.flush()
    await waitUntil(() => writes === 2, 'the rest of the chunk was never handed to the thread pool')
    const before = droppedLogLines()
    output.writeAtExit()
    assert.equal(droppedLogLines() - before, 9, 'lines 2 to 10 counted as dropped, line 1 not')
  })

  // 4.7 MB: far more than the pipe holds, less than the output may keep, so lines wait in the buffer; 11.7
  // MB: more than it may keep, so lines are dropped before the exit too, and no 10 s report says so.
  for (const [when, total] of [
    ['a second later', 40_000],
    ['mid-write', 40_000],
    ['a second later', 100_000],
  ] as const) {
    const moment = when === 'mid-write' ? 'just as a retried write has gone to the thread pool' : when
    test(`when the process exits while its stdout is not read (${moment}, ${total} lines), then every line is written whole or counted as dropped, all counted in the exit's report, and only a write the exit cut short is counted twice`, async (t) => {
      const fixture = fileURLToPath(new URL('./fixtures/stuck-stdout.fixture.ts', import.meta.url))
      const child = spawn(process.execPath, [fixture, String(total), when], {
        stdio: ['ignore', 'pipe', 'pipe'],
      })
      t.after(() => child.kill('SIGKILL'))
      // Not read until the child has exited: the pipe fills, and its writes meet EAGAIN. The listener comes
      // first: at exit Node drains and discards a child's stdout that nobody listens to.
      const chunks: Buffer[] = []
      child.stdout.on('data', (chunk: Buffer) => chunks.push(chunk)).pause()
      let stderr = ''
      child.stderr.setEncoding('utf8').on('data', (text: string) => {
        stderr += text
      })
      const [code] = await within(once(child, 'exit'), 10_000, 'the child did not exit')
      child.stdout.resume()
      await within(once(child.stdout, 'end'), 5000, 'stdout did not end')
      assert.equal(code, 0, stderr)
      const dropped = Number(/^dropped (\d+)$/m.exec(stderr)?.[1])
      const text = Buffer.concat(chunks).toString('utf8')
      const whole = text
        .slice(0, text.lastIndexOf('\n') + 1)
        .split('\n')
        .slice(0, -1)
      // Written in order, none twice, and the lines held back at exit are counted, not lost without a word.
      const first = whole.findIndex((line, at) => JSON.parse(line).n !== at)
      assert.equal(first, -1, `line ${first} of the output is ${whole[first]?.slice(0, 40)}`)
      assert.ok(whole.length < total, 'the pipe took every line: the test did not fill it')
      assert.match(stderr, new RegExp(`^exit: ${when}$`, 'm'), 'the child ended some other way')
      const counted = `${whole.length} written and ${dropped} counted as dropped, of ${total}`
      if (when === 'mid-write') {
        // The write in the pool never ran: exactly the lines not written are counted.
        assert.equal(whole.length + dropped, total, counted)
      } else {
        assert.ok(whole.length + dropped >= total, counted)
        // A write in the thread pool at exit may have got out: its lines (one write) are counted too.
        const perWrite = Math.ceil(LOG_OUTPUT.maxWriteBytes / ((whole[0] as string).length + 1))
        assert.ok(whole.length + dropped <= total + perWrite, counted)
      }
      // And said where an operator sees it, since no metric or warning line can carry it any more.
      const report = stderr.split('\n').find((line) => line.includes('log lines dropped at exit'))
      assert.equal(JSON.parse(report ?? '{}').droppedLines, dropped, stderr)
    })
  }
})

describe('the write at exit', () => {
  test("when the process exits with its stdout full and the reader comes back meanwhile, then the exit's write waits for it and every line gets out, none dropped", async (t) => {
    const fixture = fileURLToPath(new URL('./fixtures/stuck-stdout.fixture.ts', import.meta.url))
    // 4.7 MB: far more than the pipe (a socket pair) holds, so the exit's first write meets EAGAIN.
    const total = 40_000
    const child = spawn(process.execPath, [fixture, String(total), 'read at exit'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    t.after(() => child.kill('SIGKILL'))
    const chunks: Buffer[] = []
    child.stdout.on('data', (chunk: Buffer) => chunks.push(chunk)).pause()
    // Listened for from the start: read at once, stdout may end before the exit is seen.
    const ended = once(child.stdout, 'end')
    let stderr = ''
    child.stderr.setEncoding('utf8').on('data', (text: string) => {
      stderr += text
      // The reader comes back once the exit has begun, a moment later.
      if (text.includes('exit: read at exit')) setTimeout(() => child.stdout.resume(), 50)
    })
    const [code] = await within(once(child, 'exit'), 15_000, 'the child did not exit')
    await within(ended, 5000, 'stdout did not end')
    assert.equal(code, 0, stderr)
    assert.match(stderr, /^dropped 0$/m)
    const lines = Buffer.concat(chunks).toString('utf8').trimEnd().split('\n')
    assert.deepEqual(
      lines.map((line) => JSON.parse(line).n),
      Array.from({ length: total }, (_, n) => n),
    )
  })
})

/**
 * Runs the refusing-file fixture on `path` (refused by a file-size limit, or by a full disk until `filler` is
 * removed) and checks that every line was kept and written, the refusal said once on stderr as one that may
 * pass, never as an output gone for good.
 */
async function refusedThenTaken(t: TestContext, path: string, code: string, filler?: string) {
  const fixture = fileURLToPath(new URL('./fixtures/refusing-file.fixture.ts', import.meta.url))
  const total = 200
  const child = spawn(process.execPath, [fixture, path, String(total), ...(filler ? [filler] : [])], {
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  t.after(() => child.kill('SIGKILL'))
  let stdout = ''
  let stderr = ''
  child.stdout.setEncoding('utf8').on('data', (text: string) => {
    stdout += text
  })
  child.stderr.setEncoding('utf8').on('data', (text: string) => {
    stderr += text
  })
  const [exitCode] = await within(once(child, 'exit'), 15_000, 'the child did not exit')
  assert.equal(exitCode, 0, stderr)
  assert.deepEqual(JSON.parse(stdout), { flushed: true, dropped: 0 }, stderr)
  const numbers = readFileSync(path, 'utf8')
    .trimEnd()
    .split('\n')
    .map((line) => JSON.parse(line).n)
  assert.deepEqual(numbers, [...Array.from({ length: total }, (_, n) => n), 'after'])
  const said = stderr.split('\n').filter((line) => line.includes(code))
  assert.equal(said.length, 1, stderr)
  assert.doesNotMatch(stderr, /is gone/)
}

describe(
  'a log file that refuses writes for a while',
  suiteNeedingPrlimit('the refused-writes check'),
  () => {
    test('when its writes fail with EFBIG (a file-size limit), then lines are kept, written once it takes them again, and it is not given up as gone', async (t) => {
      await refusedThenTaken(t, outputFile(t).path, 'EFBIG')
    })
  },
)

describe('a log file on a full disk', mountingSuiteOptions(), () => {
  test('when its writes fail with ENOSPC until space is freed, then lines are kept, written once there is room, and it is not given up as gone', async (t) => {
    const directory = mountTmpfs(t, 1024 * 1024)
    const filler = fillFileSystem(directory)
    await refusedThenTaken(t, join(directory, 'petstore.log'), 'ENOSPC', filler)
  })
})

describe('lines of workers sharing one stdout (their writes traced by strace)', straceSuiteOptions(), () => {
  test('when an output shared with other writers writes lines of every size, then each write is at most PIPE_BUF (4096 bytes), or one longer line alone, so that on a pipe two writers never interleave', async (t) => {
    const directory = temporaryDirectory(t)
    const lines = mixedLines(400)
    const module = new URL('../src/log/log-output.ts', import.meta.url).href
    const script = `const { BufferedLogOutput } = await import(${JSON.stringify(module)})
const output = new BufferedLogOutput({ shared: true, fd: 1 })
for (const line of ${JSON.stringify(lines)}) output.write(line)
output.flush()`
    // A file per thread (-ff): no call split in two by another thread's, as one shared file would have.
    const traced = ['-ff', '-qq', '-e', 'trace=write', '-e', 'signal=none', '-o', join(directory, 'w')]
    const child = spawn('strace', [...traced, process.execPath], { stdio: ['pipe', 'pipe', 'inherit'] })
    t.after(() => child.kill('SIGKILL'))
    child.stdin.end(`${script}\n`)
    let written = ''
    child.stdout.setEncoding('utf8').on('data', (text: string) => {
      written += text
    })
    const [code] = await within(once(child, 'exit'), 30_000, 'the writer did not exit')
    assert.equal(code, 0)
    assert.equal(written, lines.join(''))
    const traces = readdirSync(directory).map((name) => readFileSync(join(directory, name), 'utf8'))
    const sizes = traces.flatMap((trace) =>
      [...trace.matchAll(/^write\(1, .*\) = (\d+)$/gm)].map((w) => Number(w[1])),
    )
    const longLines = new Set(lines.map((line) => Buffer.byteLength(line)).filter((bytes) => bytes > 4096))
    assert.deepEqual(
      sizes.filter((size) => size > 4096 && !longLines.has(size)),
      [],
      'writes over PIPE_BUF of more than one line',
    )
    assert.equal(
      sizes.reduce((sum, size) => sum + size, 0),
      Buffer.byteLength(written),
      'every byte seen written',
    )
  })
})
