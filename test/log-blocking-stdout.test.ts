import assert from 'node:assert/strict'
import { execFileSync, spawn, spawnSync } from 'node:child_process'
import { once } from 'node:events'
import { closeSync, constants, openSync, readFileSync, readSync } from 'node:fs'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { generateApiKey } from '../src/auth/api-key.ts'
import { waitFor, within } from './helpers/bounded-wait.ts'
import { temporaryDirectory } from './helpers/cleanup.ts'
import { CLI, cliEnvironment } from './helpers/cli-process.ts'

const key = generateApiKey()
const O_NONBLOCK = 0o4000

/** Whether the open file behind a process's descriptor is non-blocking (`flags:` of /proc's fdinfo, octal). */
function nonBlocking(pid: number, fd: number): boolean {
  const flags = /^flags:\s+([0-7]+)$/m.exec(readFileSync(`/proc/${pid}/fdinfo/${fd}`, 'utf8'))?.[1]
  assert.ok(flags, `no flags for descriptor ${fd} of ${pid}`)
  return (Number.parseInt(flags, 8) & O_NONBLOCK) !== 0
}

/** What a non-blocking descriptor holds now ('' when nothing). */
function readAvailable(fd: number): string {
  const buffer = Buffer.alloc(64 * 1024)
  let text = ''
  for (;;) {
    try {
      const read = readSync(fd, buffer, 0, buffer.length, null)
      if (read === 0) return text
      text += buffer.toString('utf8', 0, read)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EAGAIN') return text
      throw error
    }
  }
}

describe('the log on a stdout that blocks', () => {
  test('when its stdout is a pipe another process has made blocking and nobody reads it, then SIGTERM still ends the server, the lines it could not write counted as dropped', {
    timeout: 60_000,
  }, async (t) => {
    const dir = temporaryDirectory(t)
    // A named pipe, as container runtimes give a service for its log: the read end opened first and
    // non-blocking so that the write end opens at once; the write end blocking, as those pipes are.
    const fifo = join(dir, 'stdout.fifo')
    execFileSync('mkfifo', [fifo])
    const reader = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK)
    const writer = openSync(fifo, constants.O_WRONLY)
    t.after(() => {
      closeSync(writer)
      closeSync(reader)
    })
    // Every request refused with its line (the rate limit is off), each line over 2,000 bytes long.
    const env = {
      HOST: '127.0.0.1',
      PORT: '0',
      API_KEYS: `ops:${key}`,
      RATE_LIMIT_PER_MINUTE: '0',
      LOG_LEVEL: 'info',
    }
    const child = spawn(process.execPath, [CLI, 'serve'], {
      env: cliEnvironment(env),
      cwd: dir,
      stdio: ['ignore', writer, 'pipe'],
    })
    t.after(() => child.kill('SIGKILL'))
    let stderr = ''
    assert.ok(child.stderr)
    child.stderr.setEncoding('utf8').on('data', (text: string) => {
      stderr += text
    })
    let stdout = ''
    const origin = await waitFor(
      () => {
        stdout += readAvailable(reader)
        return /serving (http:\/\/[\d.]+:\d+)\/v1/.exec(stdout)?.[1]
      },
      () => `serve did not start:\n${stdout}${stderr}`,
      { timeoutMs: 15_000, everyMs: 20 },
    )
    // Node made the pipe non-blocking when the server touched its stdout; a process started with the same
    // stdout makes it blocking again for everyone (libuv clears O_NONBLOCK on a child's standard streams).
    assert.ok(nonBlocking(child.pid as number, 1), 'the server left its stdout blocking')
    spawnSync('true', { stdio: ['ignore', writer, 'ignore'] })
    assert.ok(!nonBlocking(child.pid as number, 1), 'the pipe is still non-blocking: the test shows nothing')

    // From here on nobody reads: ten times what the pipe holds is logged.
    const path = `/v1/pets?padding=${'a'.repeat(3000)}`
    for (let sent = 0; sent < 300; sent += 10) {
      const statuses = await Promise.all(
        Array.from({ length: 10 }, async () => {
          const response = await fetch(`${origin}${path}`, { headers: { authorization: `Bearer ${key}` } })
          await response.arrayBuffer()
          return response.status
        }),
      )
      assert.deepEqual(new Set(statuses), new Set([400]))
    }
    const exited = once(child, 'exit')
    child.kill('SIGTERM')
    const [code] = await within(
      exited,
      15_000,
      () => `the server did not exit: a write to its stdout holds its exit\n${stderr}`,
    )
    assert.equal(code, 0, stderr)
    const report = stderr.split('\n').find((line) => line.includes('log lines dropped at exit'))
    assert.ok(Number(JSON.parse(report ?? '{}').droppedLines) > 0, `no count of dropped lines in:\n${stderr}`)
  })
})
