import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { generateApiKey } from '../src/auth/api-key.ts'
import { temporaryDirectory } from './helpers/cleanup.ts'
import { exitWithin, logLines, startServeProcess, waitForLog } from './helpers/cli-process.ts'
import { killIfRunning, servingWorkers, supervisorSawDeath } from './helpers/cluster-process.ts'

const key = generateApiKey()
const env = { API_KEYS: `ops:${key}`, WORKERS: '2' }

describe('supervisor shutdown', () => {
  test('when SIGHUP reaches the supervisor and its workers (their terminal closed), then they drain and it exits 0', async (t) => {
    const server = await startServeProcess(env, temporaryDirectory(t))
    t.after(() => server.child.kill('SIGKILL'))
    const workers = await servingWorkers(server, 2)
    // A terminal's hang-up reaches its whole process group: the supervisor and every worker. Which of its
    // hang-up and the supervisor's SIGTERM a worker takes first is the kernel's choice: either drains it.
    for (const pid of [...workers, server.child.pid as number]) process.kill(pid, 'SIGHUP')
    assert.equal(await exitWithin(server), 0, server.output())
    assert.doesNotMatch(server.output(), /did not stop cleanly|a worker died/)
    const drained = logLines(server).filter((line) => line.msg === 'shutting down')
    assert.deepEqual(drained.map((line) => line.pid).sort(), [...workers].sort(), server.output())
    // The supervisor's own last line says the stop finished, as a lone process's does.
    const own = logLines(server).filter((line) => line.pid === server.child.pid)
    const last = own.at(-1)
    assert.deepEqual([last?.level, last?.msg, last?.signal], [30, 'stopped', 'SIGHUP'], server.output())
    assert.ok(Number(last?.durationMs) >= 0, server.output())
  })

  test('when SIGHUP reaches a worker, then it drains and exits 0 of itself rather than being killed by it', async (t) => {
    const server = await startServeProcess(env, temporaryDirectory(t))
    t.after(() => server.child.kill('SIGKILL'))
    const [worker] = (await servingWorkers(server, 2)) as [number, number]
    // Alone, so that its own handler is what ends it (in a group, the supervisor's SIGTERM may come first).
    process.kill(worker, 'SIGHUP')
    const exit = await supervisorSawDeath(server, worker, 'stopped')
    assert.deepEqual([exit.exitCode, exit.signal], [0, null], server.output())
    const own = logLines(server).find((line) => line.pid === worker && line.msg === 'shutting down')
    assert.equal(own?.signal, 'SIGHUP', server.output())
    server.child.kill('SIGTERM')
    assert.equal(await exitWithin(server), 0, server.output())
  })

  test('when a worker dies while the others drain, then the supervisor exits 1', async (t) => {
    const server = await startServeProcess(env, temporaryDirectory(t))
    t.after(() => server.child.kill('SIGKILL'))
    const [failing] = (await servingWorkers(server, 2)) as [number, number]
    // Stopped, it cannot drain and exit 0 before it is killed below; a crash mid-drain, deterministically.
    process.kill(failing, 'SIGSTOP')
    t.after(() => killIfRunning(failing))
    const started = Date.now()
    server.child.kill('SIGTERM')
    await waitForLog(server, (lines) => lines.find((line) => line.msg === 'stopping workers'))
    process.kill(failing, 'SIGKILL')
    assert.equal(await exitWithin(server), 1)
    assert.ok(Date.now() - started < 5000, 'at once, not after the shutdown deadline')
    assert.match(server.output(), /a worker did not stop cleanly/)
    const own = logLines(server).filter((line) => line.pid === server.child.pid)
    assert.equal(
      own.filter((line) => line.msg === 'stopped').length,
      0,
      'a stop that lost a worker is no clean stop',
    )
  })

  // A timeout of its own: without the bound, the supervisor would wait for the stuck worker forever.
  test('when a worker does not stop, then the supervisor kills it after SHUTDOWN_TIMEOUT_MS and a margin, and exits 1', {
    timeout: 20_000,
  }, async (t) => {
    const server = await startServeProcess({ ...env, SHUTDOWN_TIMEOUT_MS: '200' }, temporaryDirectory(t))
    t.after(() => server.child.kill('SIGKILL'))
    const [stuck] = (await servingWorkers(server, 2)) as [number, number]
    process.kill(stuck, 'SIGSTOP')
    t.after(() => killIfRunning(stuck))
    const started = Date.now()
    server.child.kill('SIGTERM')
    assert.equal(await exitWithin(server, 15_000), 1)
    const waited = Date.now() - started
    assert.ok(waited >= 200 + 5000 - 100 && waited < 200 + 5000 + 3000, `waited ${waited} ms`)
    assert.match(server.output(), /a worker did not stop in time; killing it/)
  })
})
