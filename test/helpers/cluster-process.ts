import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import type { TestContext } from 'node:test'
import { within } from './bounded-wait.ts'
import { temporaryDirectory } from './cleanup.ts'
import { CLI, cliEnvironment, type ServeProcess, startServeProcess, waitForLog } from './cli-process.ts'

type Requester = (server: ServeProcess, path: string, init?: RequestInit) => Promise<Response>

/**
 * Waits for the supervisor to log that the worker `pid` died (a crash, a kill) or, with `how` 'stopped',
 * that it stopped cleanly (a stop signal sent to it alone).
 */
export function supervisorSawDeath(server: ServeProcess, pid: number, how: 'died' | 'stopped' = 'died') {
  return waitForLog(server, (lines) =>
    lines.find((line) => line.msg === `a worker ${how}; replacing it` && line.worker === pid),
  )
}

/** The pids of the workers that announced "serving …", in order, once there are `count` of them. */
export function servingWorkers(server: ServeProcess, count: number): Promise<number[]> {
  return waitForLog(server, (lines) => {
    const pids = lines
      .filter((line) => String(line.msg).startsWith('serving '))
      .map((line) => Number(line.pid))
    const distinct = [...new Set(pids)]
    return distinct.length >= count ? distinct : undefined
  })
}

/** Creates `count` pets at once (names `<prefix><i>`), so that every worker takes some; all must be 201. */
export async function createPets(
  server: ServeProcess,
  request: Requester,
  count: number,
  prefix: string,
): Promise<void> {
  const statuses = await Promise.all(
    Array.from({ length: count }, async (_, i) => {
      const response = await request(server, '/v1/pets', {
        method: 'POST',
        body: `{"name":"${prefix}${i}","categoryId":1}`,
      })
      return response.status
    }),
  )
  assert.deepEqual([...new Set(statuses)], [201])
}

/**
 * A service of two workers (`env` has WORKERS=2) once both serve and it has created `sent` pets, and the
 * pid of a worker that created some of them (every create in the log by then).
 */
export async function workersAfterCreates(
  t: TestContext,
  env: Record<string, string>,
  request: Requester,
  sent: number,
): Promise<{ server: ServeProcess; creator: number }> {
  const server = await startServeProcess(env, temporaryDirectory(t))
  t.after(() => server.child.kill('SIGKILL'))
  await servingWorkers(server, 2)
  await createPets(server, request, sent, 'c')
  const creator = await waitForLog(server, (lines) => {
    const found = lines.filter((line) => line.msg === 'request' && line.operation === 'createPet')
    return found.length >= sent ? Number(found[0]?.pid) : undefined
  })
  return { server, creator }
}

/** The supervisor's summed metrics: each sample's value, by its name and labels as written. */
export async function scrapeSupervisor(server: ServeProcess): Promise<Map<string, number>> {
  const { metricsPort } = await waitForLog(server, (lines) =>
    lines.find((line) => line.msg === 'supervising workers'),
  )
  const response = await fetch(`http://127.0.0.1:${metricsPort}/metrics`)
  const text = await response.text()
  assert.equal(response.status, 200, text)
  const samples = new Map<string, number>()
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue
    const space = line.lastIndexOf(' ')
    samples.set(line.slice(0, space), Number(line.slice(space + 1)))
  }
  return samples
}

/** Kills the process if it is still there: for cleanups that run whether or not a test ended it. */
export function killIfRunning(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL')
  } catch {
    // Already gone.
  }
}

/**
 * `serve` (or what `argv` runs) with `env` (WORKERS among it), its stdout and stderr kept apart; `stop`
 * sends SIGTERM and resolves with the exit once both are read to their end.
 */
export function serveWorkers(t: TestContext, env: Record<string, string>, argv = [CLI, 'serve']) {
  const child = spawn(process.execPath, argv, {
    env: cliEnvironment({ HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info', ...env }),
    cwd: temporaryDirectory(t),
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  t.after(() => child.kill('SIGKILL'))
  const output = { stdout: '', stderr: '' }
  child.stdout.setEncoding('utf8').on('data', (text: string) => {
    output.stdout += text
  })
  child.stderr.setEncoding('utf8').on('data', (text: string) => {
    output.stderr += text
  })
  const closed = once(child, 'close')
  const stop = () => {
    child.kill('SIGTERM')
    return within(closed, 10_000, () => `no exit:\n${output.stdout}${output.stderr}`)
  }
  return { child, output, closed, stop }
}
