import { type ChildProcess, type SpawnOptions, spawn, spawnSync } from 'node:child_process'
import { availableParallelism } from 'node:os'

/** The core the servers (service, baseline, PostgreSQL) run on, and the one the load generator runs on. */
export const SERVER_CORE = 0
export const LOAD_CORE = 1

const children = new Set<ChildProcess>()
const exitHooks: Array<() => void> = []

/** Whether processes can be pinned to cores: `taskset` works here and there are two cores to split. */
export const canPin: boolean =
  availableParallelism() >= 2 && spawnSync('taskset', ['-p', String(process.pid)]).status === 0

/**
 * Pins this process (every thread) to the server core, so everything it starts without an explicit core
 * — above all the PostgreSQL server, started by a helper that does not know about cores — lands there too.
 */
export function pinSelfToServerCore(): void {
  if (canPin) spawnSync('taskset', ['-a', '-p', '-c', String(SERVER_CORE), String(process.pid)])
}

/** `spawn`, on one core when pinning is possible, tracked so that it is killed whenever the bench ends. */
export function spawnTracked(
  core: number | undefined,
  command: string,
  args: string[],
  options: SpawnOptions,
): ChildProcess {
  // taskset execs the command, so the child's pid is the command's pid (needed for /proc/<pid>/status).
  const child =
    canPin && core !== undefined
      ? spawn('taskset', ['-c', String(core), command, ...args], options)
      : spawn(command, args, options)
  children.add(child)
  child.once('exit', () => children.delete(child))
  return child
}

/**
 * Runs `node args` on `core` and parses the last line of its standard output as JSON: the child's pid at
 * once, and the value once it has exited with 0; otherwise the promise fails with its standard error.
 */
export function runNodeForJson<T>(
  core: number,
  args: string[],
  what: string,
): { pid: number | undefined; result: Promise<T> } {
  const child = spawnTracked(core, process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout?.on('data', (chunk) => {
    stdout += chunk
  })
  child.stderr?.on('data', (chunk) => {
    stderr += chunk
  })
  const result = new Promise<T>((resolve, reject) => {
    // 'close', not 'exit': only then has every byte of its output been read.
    child.once('close', () => {
      if (child.exitCode !== 0) {
        reject(new Error(`${what} failed (${child.exitCode ?? child.signalCode}):\n${stderr}`))
        return
      }
      try {
        resolve(JSON.parse(stdout.trim().split('\n').at(-1) ?? '') as T)
      } catch {
        reject(new Error(`${what} printed no result:\n${stdout}\n${stderr}`))
      }
    })
  })
  return { pid: child.pid, result }
}

/** Resolves once the child has exited (at once if it already has). */
export function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve()
  return new Promise((resolve) => child.once('exit', () => resolve()))
}

/** SIGTERM, then SIGKILL if the child is still there after `graceMs`. */
export async function stopChild(child: ChildProcess, graceMs = 10_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  child.kill('SIGTERM')
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs)
  await exited(child)
  clearTimeout(timer)
}

/** Runs at process exit, after the children are killed (e.g. removing temporary directories). */
export function onExit(hook: () => void): void {
  exitHooks.push(hook)
}

function killEverything(): void {
  for (const child of children) child.kill('SIGKILL')
  for (const hook of exitHooks.splice(0).reverse()) {
    try {
      hook()
    } catch {
      // Best effort: a failing cleanup must not keep the others from running.
    }
  }
}

/**
 * Kills every tracked child on any way out: normal exit, an error, Ctrl-C. `process.exit` is what runs the
 * PostgreSQL helper's own `exit` hook, which stops the throwaway server.
 */
export function installCleanup(): void {
  process.once('exit', killEverything)
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(signal, () => {
      process.stderr.write(`\nbench: ${signal}, stopping every child process\n`)
      process.exit(130)
    })
  }
}
