import assert from 'node:assert/strict'
import { type ChildProcess, execFileSync, spawnSync } from 'node:child_process'
import { once } from 'node:events'
import { closeSync, constants, openSync, readFileSync } from 'node:fs'
import { connect, createServer, type Socket } from 'node:net'
import { join } from 'node:path'
import { describe, type TestContext, test } from 'node:test'
import { waitUntil, within } from './helpers/bounded-wait.ts'
import { temporaryDirectory } from './helpers/cleanup.ts'
import { readAvailable } from './helpers/pipe-reads.ts'
import { childrenOf } from './helpers/process-children.ts'
import { sendMany, serveWithStdout } from './helpers/serve-with-stdout.ts'

const O_NONBLOCK = 0o4000

/** Whether the open file behind a process's descriptor is non-blocking (`flags:` of /proc's fdinfo, octal). */
function nonBlocking(pid: number, fd: number): boolean {
  const flags = /^flags:\s+([0-7]+)$/m.exec(readFileSync(`/proc/${pid}/fdinfo/${fd}`, 'utf8'))?.[1]
  assert.ok(flags, `no flags for descriptor ${fd} of ${pid}`)
  return (Number.parseInt(flags, 8) & O_NONBLOCK) !== 0
}

// A request refused with its line, over 2,000 bytes long.
const PADDED = `/v1/pets?padding=${'a'.repeat(3000)}`

/**
 * `serve` with two workers, its stdout a stream socket as systemd's journal gives a unit (its stderr too,
 * with `stderrToo`, as `StandardError=inherit` gives it); the test reads it until the service serves, then
 * stops reading (a journal that no longer keeps up) and sends far more lines than the socket's buffers hold.
 */
async function serveOnStoppedJournal(t: TestContext, { stderrToo = false } = {}) {
  const dir = temporaryDirectory(t)
  const listener = createServer()
  await new Promise<void>((resolve) => listener.listen(join(dir, 'journal.sock'), resolve))
  const accepted = once(listener, 'connection') as Promise<[Socket]>
  const journalEnd = connect(listener.address() as string)
  await once(journalEnd, 'connect')
  const [reader] = await accepted
  t.after(() => {
    reader.destroy()
    journalEnd.destroy()
    listener.close()
  })
  let stdout = ''
  reader.setEncoding('utf8').on('data', (text: string) => {
    stdout += text
  })
  const server = await serveWithStdout(
    t,
    journalEnd,
    dir,
    () => stdout,
    { WORKERS: '2' },
    stderrToo ? journalEnd : 'pipe',
  )
  // The supervisor made the socket non-blocking as it first touched its stdout (bin/petstore.js), and the
  // workers, which write it as their descriptor 4, rely on that: no worker's start may clear it.
  assert.ok(nonBlocking(server.child.pid as number, 1), 'the shared stdout is blocking')
  reader.pause()
  assert.deepEqual(new Set(await sendMany(server.origin, PADDED, 1000, 10)), new Set([400]))
  return server
}

/** SIGTERM, then the exit, within 15 s. */
function exitOnSigterm(child: ChildProcess, stderr: () => string) {
  const exited = once(child, 'exit')
  child.kill('SIGTERM')
  return within(
    exited,
    15_000,
    () => `the service did not exit: a write to its stdout holds an exit\n${stderr()}`,
  )
}

describe('request log output: a stdout nobody reads that blocks', () => {
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
    let stdout = ''
    const { child, origin, stderr } = await serveWithStdout(t, writer, dir, () => {
      stdout += readAvailable(reader)
      return stdout
    })
    // Node made the pipe non-blocking when the server touched its stdout; a process started with the same
    // stdout makes it blocking again for everyone (libuv clears O_NONBLOCK on a child's standard streams).
    assert.ok(nonBlocking(child.pid as number, 1), 'the server left its stdout blocking')
    spawnSync('true', { stdio: ['ignore', writer, 'ignore'] })
    assert.ok(!nonBlocking(child.pid as number, 1), 'the pipe is still non-blocking: the test shows nothing')

    // From here on nobody reads: ten times what the pipe holds is logged (every request refused with its
    // line, each over 2,000 bytes long).
    const path = `/v1/pets?padding=${'a'.repeat(3000)}`
    assert.deepEqual(new Set(await sendMany(origin, path, 300, 10)), new Set([400]))
    const exited = once(child, 'exit')
    child.kill('SIGTERM')
    const [code] = await within(
      exited,
      15_000,
      () => `the server did not exit: a write to its stdout holds its exit\n${stderr()}`,
    )
    assert.equal(code, 0, stderr())
    const report = stderr()
      .split('\n')
      .find((line) => line.includes('log lines dropped at exit'))
    assert.ok(
      Number(JSON.parse(report ?? '{}').droppedLines) > 0,
      `no count of dropped lines in:\n${stderr()}`,
    )
  })

  test('when its stdout is a socket its workers were started with and nobody reads it, then SIGTERM still ends the service, the lines its workers could not write counted as dropped', {
    timeout: 60_000,
  }, async (t) => {
    const { child, stderr } = await serveOnStoppedJournal(t)
    const [code] = await exitOnSigterm(child, stderr)
    assert.equal(code, 0, stderr())
    // Both workers' lines filled the socket: each counted what it could not write, relayed to stderr.
    const reporters = stderr()
      .split('\n')
      .filter((line) => line.includes('log lines dropped at exit'))
      .map((line) => JSON.parse(line).pid)
      .filter((pid) => pid !== child.pid)
    assert.equal(new Set(reporters).size, 2, `reports of dropped lines:\n${stderr()}`)
  })

  test('when its stdout and stderr are one socket its workers were started with and nobody reads it, then SIGTERM still ends the service', {
    timeout: 60_000,
  }, async (t) => {
    const { child, stderr } = await serveOnStoppedJournal(t, { stderrToo: true })
    const [code] = await exitOnSigterm(child, stderr)
    assert.equal(code, 0)
  })

  test('when a worker is replaced while nobody reads the socket that is its stdout, then SIGTERM still ends the service', {
    timeout: 60_000,
  }, async (t) => {
    const { child, origin, stderr } = await serveOnStoppedJournal(t)
    const supervisor = child.pid as number
    const [killed] = childrenOf(supervisor)
    assert.ok(killed, 'the supervisor has no worker')
    process.kill(killed, 'SIGKILL')
    // The replacement starts while the others retry writes the full socket refused; the shared socket
    // must stay non-blocking throughout, looked at every few milliseconds until well after the start.
    let blocking = 0
    await waitUntil(() => {
      if (!nonBlocking(supervisor, 1)) blocking++
      return childrenOf(supervisor).length === 2 && !childrenOf(supervisor).includes(killed)
    }, 'no worker replaced the killed one')
    const until = Date.now() + 1500
    while (Date.now() < until) {
      if (!nonBlocking(supervisor, 1)) blocking++
      await new Promise((resolve) => setTimeout(resolve, 2))
    }
    assert.equal(blocking, 0, 'the shared socket was seen blocking while a worker started')
    assert.deepEqual(new Set(await sendMany(origin, PADDED, 300, 10)), new Set([400]))
    const [code] = await exitOnSigterm(child, stderr)
    assert.equal(code, 0, stderr())
  })
})
