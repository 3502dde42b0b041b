import assert from 'node:assert/strict'
import { type ChildProcess, type SpawnOptions, spawn } from 'node:child_process'
import { once } from 'node:events'
import { text } from 'node:stream/consumers'
import type { TestContext } from 'node:test'
import { fileURLToPath } from 'node:url'
import { waitFor, within } from './bounded-wait.ts'
import type { Cleanup } from './cleanup.ts'
import { checkedFetch } from './conformance-fetch.ts'

/** The command's entry point, as `npm start`, `npm run petstore` and the installed `petstore` run it. */
export const CLI = fileURLToPath(new URL('../../bin/petstore.js', import.meta.url))

/** The line a serve process writes once it listens; its group is the API's origin. */
export const SERVING_LINE = /serving (http:\/\/[\d.]+:\d+)\/v1/

/** The environment a CLI run gets: nothing from this process but PATH, so the test states every setting. */
export function cliEnvironment(env: Record<string, string>): Record<string, string> {
  return { PATH: process.env.PATH ?? '', LOG_LEVEL: 'warn', METRICS_PORT: '0', ...env }
}

export interface CliResult {
  /** The exit code; null if a signal ended the process. */
  status: number | null
  stdout: string
  stderr: string
}

export interface RunOptions {
  /** An open file for its standard output (`/dev/full`), else a pipe read into the result. */
  stdout?: number
  timeoutMs?: number
  /** Given the process as it starts. */
  started?: (child: ChildProcess) => void
}

/**
 * Runs the CLI to its end; one still running after `timeoutMs` (a `serve` that should have refused) is
 * killed, which fails the call. It does not block: a blocked test cannot see a kept-alive connection it holds
 * being closed, and its next request would meet the closed socket.
 */
export function runCli(
  args: string[],
  env: Record<string, string>,
  cwd: string,
  options: RunOptions = {},
): Promise<CliResult> {
  return runCommand(process.execPath, [CLI, ...args], { env: cliEnvironment(env), cwd }, options)
}

/** Runs `command` to its end as runCli runs the CLI (through runuser, setpriv…); `env` unset: this one's. */
export async function runCommand(
  command: string,
  args: string[],
  { env, cwd }: { env?: Record<string, string>; cwd: string },
  { stdout, timeoutMs = 60_000, started }: RunOptions = {},
): Promise<CliResult> {
  const child = spawn(command, args, { env, cwd, stdio: ['pipe', stdout ?? 'pipe', 'pipe'] })
  // Its standard input ends at once, as spawnSync's with no input did.
  child.stdin?.end()
  started?.(child)
  let timedOut = false
  const timer = setTimeout(() => {
    timedOut = true
    child.kill('SIGKILL')
  }, timeoutMs)
  try {
    const [output, stderr, [status]] = await Promise.all([
      child.stdout ? text(child.stdout) : '',
      child.stderr ? text(child.stderr) : '',
      once(child, 'close') as Promise<[number | null]>,
    ])
    if (timedOut) {
      throw new Error(`${[command, ...args].join(' ')} did not end within ${timeoutMs / 1000} s:\n${stderr}`)
    }
    return { status, stdout: output, stderr }
  } finally {
    clearTimeout(timer)
  }
}

/** Runs `command`, killed once the test ends, keeping what it writes to stdout; `exited`: its code and signal. */
export function spawnCollecting(t: Cleanup, command: string, args: string[], options: SpawnOptions) {
  const child = spawn(command, args, { ...options, stdio: ['pipe', 'pipe', 'pipe'] })
  t.after(() => child.kill('SIGKILL'))
  const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>
  let output = ''
  child.stdout?.setEncoding('utf8').on('data', (text: string) => {
    output += text
  })
  return { child, exited, output: () => output }
}

export interface ServeProcess {
  child: ChildProcess
  /** `http://127.0.0.1:<port>` */
  origin: string
  /** Everything the process wrote to stdout and stderr so far. */
  output(): string
  /** Resolves with the exit code (or signal) once the process has exited. */
  exited: Promise<number | NodeJS.Signals>
}

/** `petstore serve` on `env`'s store, as `startServeProcess`, killed after the test if still running. */
export async function serveForTest(
  t: Pick<TestContext, 'after'>,
  env: Record<string, string>,
  cwd: string,
): Promise<ServeProcess> {
  const server = await startServeProcess(env, cwd)
  t.after(() => server.child.kill('SIGKILL'))
  return server
}

/**
 * Starts `count` serve processes at once, each killed after the test: one that fails to start fails the
 * call only once every other has started or failed too, so none is left running unkilled.
 */
export async function serveInstancesForTest(
  t: Pick<TestContext, 'after'>,
  env: Record<string, string>,
  cwd: string,
  count = 2,
): Promise<ServeProcess[]> {
  const started = await Promise.allSettled(Array.from({ length: count }, () => startServeProcess(env, cwd)))
  for (const result of started) {
    if (result.status === 'fulfilled') t.after(() => result.value.child.kill('SIGKILL'))
  }
  for (const result of started) if (result.status === 'rejected') throw result.reason
  return started.map((result) => (result as PromiseFulfilledResult<ServeProcess>).value)
}

/**
 * Runs `petstore serve` as its own process on a free port and waits until it listens; `under` runs it
 * through a command first (`prlimit --nofile=256:256`).
 */
export async function startServeProcess(
  env: Record<string, string>,
  cwd: string,
  { under = [], cli = CLI }: { under?: string[]; cli?: string } = {},
): Promise<ServeProcess> {
  const [command = process.execPath, ...args] = [...under, process.execPath, cli, 'serve']
  const child = spawn(command, args, {
    // Info level at least: the "serving" line is how the helper knows the server listens.
    env: cliEnvironment({ HOST: '127.0.0.1', PORT: '0', METRICS_PORT: '0', ...env, LOG_LEVEL: 'info' }),
    cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  child.stdout?.on('data', (chunk) => {
    output += chunk
  })
  child.stderr?.on('data', (chunk) => {
    output += chunk
  })
  const exited = new Promise<number | NodeJS.Signals>((resolve) =>
    child.on('exit', (code, signal) => resolve(code ?? (signal as NodeJS.Signals))),
  )
  const origin = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`serve did not start:\n${output}`))
    }, 15_000)
    const check = () => {
      const match = SERVING_LINE.exec(output)
      if (match?.[1]) {
        clearTimeout(timer)
        resolve(match[1])
      }
    }
    child.stdout?.on('data', check)
    exited.then(() => {
      clearTimeout(timer)
      reject(new Error(`serve exited before listening:\n${output}`))
    })
  })
  return { child, origin, output: () => output, exited }
}

/**
 * Resolves with the exit code (or signal) once the process has exited; fails with its output if it is
 * still running `timeoutMs` later, so a stop that hangs fails the test instead of holding the run.
 */
export function exitWithin(server: ServeProcess, timeoutMs = 10_000): Promise<number | NodeJS.Signals> {
  return within(server.exited, timeoutMs, () => `the process is still running:\n${server.output()}`)
}

/** Stops a serve process with SIGTERM; it must exit 0 in time, or the test fails with its output. */
export async function stop(server: ServeProcess): Promise<void> {
  server.child.kill('SIGTERM')
  assert.equal(await exitWithin(server), 0, server.output())
}

export type LogLine = Record<string, unknown>

/** The JSON log lines a serve process (and its workers) wrote so far; a half-written last line is left out. */
export function logLines(server: ServeProcess): LogLine[] {
  return server
    .output()
    .split('\n')
    .slice(0, -1)
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line))
}

/** Polls the log until `found` returns something other than undefined; fails after `timeoutMs`. */
export function waitForLog<T>(
  server: ServeProcess,
  found: (lines: LogLine[]) => T | undefined,
  timeoutMs = 10_000,
): Promise<T> {
  return waitFor(
    () => found(logLines(server)),
    () => `not logged:\n${server.output()}`,
    {
      timeoutMs,
      everyMs: 20,
    },
  )
}

/** Calls a serve process with a bearer key (JSON bodies typed as such), checking conformance. */
export function requesterFor(key: string) {
  return (server: ServeProcess, path: string, init: RequestInit = {}) =>
    checkedFetch(server.origin, path, {
      ...init,
      headers: {
        authorization: `Bearer ${key}`,
        ...(init.body ? { 'content-type': 'application/json' } : {}),
        ...init.headers,
      },
    })
}
