import type { ChildProcess } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { freePort } from '../test/helpers/free-port.ts'
import { peakRssKiB } from './process-stats.ts'
import { exited, SERVER_CORE, spawnTracked, stopChild } from './processes.ts'
import { captureOutput, type LogSink, openLogFile } from './service-output.ts'

const CLI = fileURLToPath(new URL('../bin/petstore.js', import.meta.url))
const REPOSITORY = fileURLToPath(new URL('..', import.meta.url))

/** The `start` script of package.json, as written. */
function startScriptText(): string {
  return String(JSON.parse(readFileSync(`${REPOSITORY}package.json`, 'utf8')).scripts.start)
}

// `NAME=value` or `NAME=${NAME:-value}` before the command: a default the operator's own setting overrides.
const ASSIGNMENT = /^([A-Z_][A-Z0-9_]*)=(?:\$\{\1:-([^}]*)\}|(\S*))\s+/

/**
 * What `npm start` sets and runs: the environment its script gives (each default taken, as in a shell
 * where the operator set none of them), then the command, less the `exec` that hands npm's shell over.
 */
export function startCommand(script = startScriptText()): { env: Record<string, string>; command: string } {
  let rest = script
  const env: Record<string, string> = {}
  for (let match = ASSIGNMENT.exec(rest); match; match = ASSIGNMENT.exec(rest)) {
    const value = match[2] ?? match[3] ?? ''
    // Quoting or any other expansion would need a shell: refused rather than passed on as text.
    if (/[$"'`\\]/.test(value))
      throw new Error(`npm start's ${match[1]}: only NAME=value or NAME=\${NAME:-value}`)
    env[match[1] as string] = value
    rest = rest.slice(match[0].length)
  }
  return { env, command: rest.replace(/^exec /, '') }
}

/** The start command as the report shows it: its environment, then the command. */
export function startScript(): string {
  const { env, command } = startCommand()
  return [...Object.entries(env).map(([name, value]) => `${name}=${value}`), command].join(' ')
}

/**
 * The arguments `npm start` gives node (runtime flags, then the CLI), so the bench measures exactly what
 * a deployment runs. Paths are made absolute: the service runs in the bench's temporary directory.
 */
export function startCommandArgs(extraNodeFlags: string[] = []): string[] {
  const { command } = startCommand()
  const [program, ...args] = command.split(/\s+/)
  if (program !== 'node') throw new Error(`npm start must run node (got "${command}")`)
  const absolute = args.map((arg) => (existsSync(`${REPOSITORY}${arg}`) ? `${REPOSITORY}${arg}` : arg))
  // Node's own flags end where the script begins; extra ones go last among them, so they win.
  const script = absolute.findIndex((arg) => !arg.startsWith('-'))
  return [...absolute.slice(0, script), ...extraNodeFlags, ...absolute.slice(script)]
}

export interface ServiceProcess {
  origin: string
  pid: number
  /** The process's peak resident set size so far (VmHWM), in KiB. */
  peakRssKiB(): number
  /** What the service logged (warnings and worse; the tail only). */
  logged(): string
  /** Bytes written to its standard output (its log) so far (of a file sink: as of the last `collectLog`). */
  logBytes(): number
  /** Reads a file sink's new lines (for warnings and the byte count); between measured runs only. */
  collectLog(): void
  stop(): Promise<void>
}

/**
 * Only PATH from this process: the bench states every setting, so a developer's shell cannot skew it.
 * The log level is npm start's (info: one line per request). The rate limit stays on (its cost is part of
 * every request) but at its ceiling, so one key driving the whole load is never refused; metrics listen
 * on a free port so a running service cannot block the bench.
 */
export const BENCH_DEFAULTS: Readonly<Record<string, string>> = {
  RATE_LIMIT_PER_MINUTE: '10000000',
  METRICS_PORT: '0',
}

function serviceEnvironment(settings: Record<string, string>): Record<string, string> {
  return { PATH: process.env.PATH ?? '', ...startCommand().env, ...BENCH_DEFAULTS, ...settings }
}

/** `petstore seed --count N` on the store the service will then serve. */
export async function seedPets(databaseUrl: string, count: number, cwd: string): Promise<void> {
  const child = spawnTracked(SERVER_CORE, process.execPath, [CLI, 'seed', '--count', String(count)], {
    cwd,
    env: serviceEnvironment({ DATABASE_URL: databaseUrl }),
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const { output } = captureOutput(child, undefined)
  await exited(child)
  if (child.exitCode !== 0) throw new Error(`seed failed (${child.exitCode}):\n${output()}`)
}

/** Polls until `url` answers at all; fails early if the process dies first. */
export async function waitUntilListening(url: string, child: ChildProcess, output: () => string) {
  const deadline = Date.now() + 30_000
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`${url}: the process exited before listening:\n${output()}`)
    }
    try {
      // Bounded: a port taken by another process may accept and never answer, while ours has exited.
      const response = await fetch(url, { signal: AbortSignal.timeout(1000) })
      await response.arrayBuffer()
      return
    } catch {
      if (Date.now() > deadline) throw new Error(`${url}: not listening after 30 s:\n${output()}`)
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }
}

export interface ServiceOptions {
  databaseUrl: string
  apiKey: string
  cwd: string
  extraEnv: Record<string, string>
  nodeFlags: string[]
  logSink: LogSink
  stdoutCopy?: string | undefined
}

/**
 * `petstore serve` as its own process on the server core, with one API key named `bench`. The port was
 * free when chosen, but another process may take it before the service listens (a full run was lost so,
 * 21 s in): then it starts again on another (`choosePort` stands in for the race in the bench's test).
 */
export async function startService(
  options: ServiceOptions,
  choosePort: () => Promise<number> = freePort,
): Promise<ServiceProcess> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startServiceOn(await choosePort(), options)
    } catch (error) {
      if (attempt === 3 || !String((error as Error).message).includes('(EADDRINUSE)')) throw error
      process.stderr.write(`bench: the service's port was taken before it listened; starting it again\n`)
    }
  }
}

async function startServiceOn(port: number, options: ServiceOptions): Promise<ServiceProcess> {
  const logFd = options.logSink === 'file' ? openLogFile(join(options.cwd, `service-${port}.log`)) : undefined
  // Several workers need several cores: then the service is not pinned (and shares the load's core).
  const core = (options.extraEnv.WORKERS ?? '1') === '1' ? SERVER_CORE : undefined
  // The working directory is the bench's temporary one: a developer's .env there would change settings.
  const child = spawnTracked(core, process.execPath, startCommandArgs(options.nodeFlags), {
    cwd: options.cwd,
    env: serviceEnvironment({
      ...options.extraEnv,
      PORT: String(port),
      HOST: '127.0.0.1',
      DATABASE_URL: options.databaseUrl,
      API_KEYS: `bench:${options.apiKey}`,
    }),
    stdio: ['ignore', logFd ?? 'pipe', 'pipe'],
  })
  const { output, stdoutBytes, collect, close } = captureOutput(child, logFd, options.stdoutCopy)
  const origin = `http://127.0.0.1:${port}`
  try {
    // The OpenAPI document needs no key, so it shows the server is up without touching the pets.
    await waitUntilListening(`${origin}/v1/openapi.json`, child, output)
  } catch (error) {
    await stopChild(child)
    close()
    throw error
  }
  const pid = child.pid as number
  return {
    origin,
    pid,
    peakRssKiB: () => peakRssKiB(pid),
    logged: output,
    logBytes: stdoutBytes,
    collectLog: collect,
    stop: async () => {
      await stopChild(child)
      close()
      // Shutdown is graceful (exit 0 on SIGTERM); anything else is worth a look.
      if (child.exitCode !== 0)
        process.stderr.write(`bench: service exited with ${child.exitCode}:\n${output()}\n`)
    },
  }
}
