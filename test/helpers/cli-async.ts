import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import type { Readable } from 'node:stream'
import { CLI } from './cli-process.ts'

export interface CliResult {
  status: number | null
  stdout: string
  stderr: string
}

async function textOf(stream: Readable): Promise<string> {
  let text = ''
  for await (const chunk of stream) text += chunk
  return text
}

/**
 * Runs one command as its own process without blocking this one (the test's writers keep writing while it
 * runs); killed after `timeoutMs`, which then fails the test. `started` is given the process as it starts.
 */
export async function runCliAsync(
  args: string[],
  env: Record<string, string>,
  cwd: string,
  { timeoutMs = 120_000, started }: { timeoutMs?: number; started?: (child: ChildProcess) => void } = {},
): Promise<CliResult> {
  const child = spawn(process.execPath, [CLI, ...args], {
    env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'warn', METRICS_PORT: '0', ...env },
    cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  started?.(child)
  let timedOut = false
  const timer = setTimeout(() => {
    timedOut = true
    child.kill('SIGKILL')
  }, timeoutMs)
  try {
    const [stdout, stderr, [status]] = await Promise.all([
      textOf(child.stdout),
      textOf(child.stderr),
      once(child, 'close') as Promise<[number | null]>,
    ])
    if (timedOut) throw new Error(`petstore ${args.join(' ')} did not end within ${timeoutMs} ms:\n${stderr}`)
    return { status, stdout, stderr }
  } finally {
    clearTimeout(timer)
  }
}
