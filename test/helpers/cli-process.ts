import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'

export const CLI = fileURLToPath(new URL('../../src/cli.ts', import.meta.url))

/** The environment a CLI run gets: nothing from this process but PATH, so the test states every setting. */
function cliEnvironment(env: Record<string, string>): Record<string, string> {
  return { PATH: process.env.PATH ?? '', LOG_LEVEL: 'warn', METRICS_PORT: '0', ...env }
}

export function runCli(args: string[], env: Record<string, string>, cwd: string) {
  const result = spawnSync(process.execPath, [CLI, ...args], {
    env: cliEnvironment(env),
    cwd,
    encoding: 'utf8',
  })
  return { status: result.status, stdout: result.stdout, stderr: result.stderr }
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

/** Runs `petstore serve` as its own process on a free port and waits until it listens. */
export async function startServeProcess(env: Record<string, string>, cwd: string): Promise<ServeProcess> {
  const child = spawn(process.execPath, [CLI, 'serve'], {
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
      const match = /serving (http:\/\/[\d.]+:\d+)\/v1/.exec(output)
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
