import { spawn } from 'node:child_process'
import type { Socket } from 'node:net'
import type { TestContext } from 'node:test'
import { generateApiKey } from '../../src/auth/api-key.ts'
import { waitFor } from './bounded-wait.ts'
import { CLI, cliEnvironment, SERVING_LINE } from './cli-process.ts'

/** The key the servers below accept, as `ops`. */
export const SERVED_KEY = generateApiKey()
const env = { API_KEYS: `ops:${SERVED_KEY}` }
const auth = { authorization: `Bearer ${SERVED_KEY}` }

/**
 * `serve` with its stdout on a descriptor the test holds (a file, a named pipe, a socket) and every request
 * logged (the rate limit off), with `extra` settings and stderr on `stderrTo`; `read` gives what that stdout
 * holds so far, searched for the serving line.
 */
export async function serveWithStdout(
  t: TestContext,
  stdout: number | Socket,
  cwd: string,
  read: () => string,
  extra: Record<string, string> = {},
  stderrTo: 'pipe' | Socket = 'pipe',
) {
  const settings = {
    HOST: '127.0.0.1',
    PORT: '0',
    ...env,
    RATE_LIMIT_PER_MINUTE: '0',
    LOG_LEVEL: 'info',
    ...extra,
  }
  const child = spawn(process.execPath, [CLI, 'serve'], {
    env: cliEnvironment(settings),
    cwd,
    stdio: ['ignore', stdout, stderrTo],
  })
  t.after(() => child.kill('SIGKILL'))
  let stderr = ''
  child.stderr?.setEncoding('utf8').on('data', (text: string) => {
    stderr += text
  })
  const origin = await waitFor(
    () => SERVING_LINE.exec(read())?.[1],
    () => `serve did not start:\n${read()}${stderr}`,
    { timeoutMs: 15_000, everyMs: 20 },
  )
  return { child, origin, stderr: () => stderr }
}

/** Sends `count` requests, `parallel` at a time, and returns their statuses. */
export async function sendMany(origin: string, path: string, count: number, parallel = 8): Promise<number[]> {
  const statuses: number[] = []
  let next = 0
  const worker = async () => {
    while (next < count) {
      next++
      const response = await fetch(`${origin}${path}`, { headers: auth })
      await response.arrayBuffer()
      statuses.push(response.status)
    }
  }
  await Promise.all(Array.from({ length: parallel }, worker))
  return statuses
}
