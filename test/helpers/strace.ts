import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { CLI, cliEnvironment } from './cli-process.ts'
import { type Lack, suiteNeeding } from './suite-requirements.ts'

/** What keeps system calls from being traced here (no strace, or ptrace refused), or undefined. */
function straceLack(): Lack | undefined {
  const probe = spawnSync('strace', ['-f', '-qq', '-e', 'trace=fsync', '-o', '/dev/null', 'true'], {
    encoding: 'utf8',
  })
  if (probe.error !== undefined)
    return { missing: 'no strace on this machine', remedy: 'apt-get install strace' }
  if (probe.status !== 0) {
    const why = probe.stderr.trim().split('\n')[0]
    return { missing: `strace cannot trace here (${why})`, remedy: 'sudo npm test, where ptrace is allowed' }
  }
  return undefined
}

/** `describe` options: skipped with one line when strace cannot run, except under CI, where that fails. */
export function straceSuiteOptions(): { skip?: string } {
  return suiteNeeding('the strace suites', straceLack())
}

export interface TracedServe {
  origin: string
  /** How many fsync or fdatasync calls the process (any thread) has made so far on a file ending so. */
  syncsOf(fileSuffix: string): number
  /** Kills the service with SIGKILL (no closing checkpoint, no last sync) and waits for strace to end. */
  kill(): Promise<void>
}

// One traced call as `strace -y` writes it: `<tid> fsync(<fd></path>) = 0`, or its `<unfinished ...>` first
// half when another thread's call interleaves.
const SYNC_CALL = /^\d+ +f(?:data)?sync\(\d+<([^>]+)>/gm

/**
 * `petstore serve` as a child of `strace -f`, which logs every fsync and fdatasync of every thread, with
 * the file each was made on; started in `cwd` with `env`, on a free loopback port.
 */
export async function startTracedServe(env: Record<string, string>, cwd: string): Promise<TracedServe> {
  const traceFile = join(cwd, 'syncs.trace')
  const child: ChildProcess = spawn(
    'strace',
    ['-f', '-qq', '-y', '-e', 'trace=fsync,fdatasync', '-o', traceFile, process.execPath, CLI, 'serve'],
    {
      env: {
        PATH: process.env.PATH ?? '',
        HOST: '127.0.0.1',
        PORT: '0',
        METRICS: 'off',
        ...env,
        LOG_LEVEL: 'info',
      },
      cwd,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  )
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  let output = ''
  child.stdout?.on('data', (chunk) => {
    output += chunk
  })
  child.stderr?.on('data', (chunk) => {
    output += chunk
  })
  // The log line saying where it serves also carries the service's own pid (strace's child, not strace).
  const started = await new Promise<{ origin: string; pid: number }>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`traced serve did not start in 20 s:\n${output}`)),
      20_000,
    )
    const check = () => {
      const line = output.split('\n').find((text) => /"msg":"serving http/.test(text))
      if (line === undefined) return
      clearTimeout(timer)
      const { pid, msg } = JSON.parse(line) as { pid: number; msg: string }
      resolve({ pid, origin: /serving (http:\/\/[\d.]+:\d+)\/v1/.exec(msg)?.[1] ?? '' })
    }
    child.stdout?.on('data', check)
    exited.then(() => {
      clearTimeout(timer)
      reject(new Error(`traced serve exited before listening:\n${output}`))
    })
  }).catch((error) => {
    child.kill('SIGKILL')
    throw error
  })
  return {
    origin: started.origin,
    syncsOf(fileSuffix) {
      const trace = readFileSync(traceFile, 'utf8')
      return [...trace.matchAll(SYNC_CALL)].filter(([, file]) => file?.endsWith(fileSuffix)).length
    },
    async kill() {
      if (child.exitCode !== null || child.signalCode !== null) return
      try {
        process.kill(started.pid, 'SIGKILL')
      } catch {
        // Already gone.
      }
      // strace ends when its last tracee has; killed too if it does not, so nothing outlives the test.
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000)
      await exited
      clearTimeout(timer)
    },
  }
}

export interface HeldAtCall {
  /** Resolves with the command's exit status and what it wrote, once it has ended. */
  ended: Promise<{ status: number | null; output: string }>
  /** Whether the command now waits in the call held (on any of its threads), held there by strace. */
  atHeldCall(): boolean
  /** Whether the command's main thread (where its synchronous steps run) now waits in the call held. */
  mainThreadAtHeldCall(): boolean
  /** Sends `signal` to the command itself (not to strace). */
  signal(signal: NodeJS.Signals): void
  /** Kills strace and the command, so a failed test leaves neither running. */
  kill(): void
}

// Each call and its system call numbers on this processor: one architecture's number may be another's
// call (x86-64's rename is arm64's fsync), and every thread is looked at. Arm64 has only the `…at` forms.
const ARM64 = process.arch === 'arm64'
const CALLS = {
  rename: { names: 'rename,renameat,renameat2', numbers: new Set(ARM64 ? [38, 276] : [82, 264, 316]) },
  link: { names: 'link,linkat', numbers: new Set(ARM64 ? [37] : [86, 265]) },
  fsync: { names: 'fsync,fdatasync', numbers: new Set(ARM64 ? [82, 83] : [74, 75]) },
}

/**
 * `petstore <args>` under `strace -f`, its first `call` (the first of each of its system calls: strace
 * counts per call and thread) held for `seconds` before it runs: what another process meets then can be
 * tried.
 */
export function runWithFirstCallHeld(
  call: keyof typeof CALLS,
  args: string[],
  env: Record<string, string>,
  cwd: string,
  seconds: number,
): HeldAtCall {
  const { names: calls, numbers } = CALLS[call]
  const child = spawn(
    'strace',
    [
      '-f',
      '-qq',
      '-o',
      '/dev/null',
      '-e',
      `trace=${calls}`,
      '-e',
      `inject=${calls}:delay_enter=${seconds}s:when=1`,
      process.execPath,
      CLI,
      ...args,
    ],
    { env: cliEnvironment(env), cwd, stdio: ['ignore', 'pipe', 'pipe'] },
  )
  let output = ''
  child.stdout?.on('data', (chunk) => {
    output += chunk
  })
  child.stderr?.on('data', (chunk) => {
    output += chunk
  })
  const ended = new Promise<{ status: number | null; output: string }>((resolve) =>
    child.once('exit', (status) => resolve({ status, output })),
  )
  const traced = () => readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, 'utf8').trim()
  // Whether one of the command's `threads` is in the call.
  const threadsAtCall = (threads: (command: string) => string[]) => {
    try {
      const command = traced()
      if (command === '') return false
      return threads(command).some((thread) =>
        numbers.has(Number(readFileSync(`/proc/${command}/task/${thread}/syscall`, 'utf8').split(' ')[0])),
      )
    } catch {
      return false
    }
  }
  return {
    ended,
    kill() {
      // The command first: strace killed alone would let it go on, past its held call.
      const command = traced()
      if (command !== '') process.kill(Number(command), 'SIGKILL')
      child.kill('SIGKILL')
    },
    signal(signal) {
      // Never pid 0, which is the whole process group (the test runner's included).
      const command = traced()
      if (command === '') throw new Error('the traced command has ended')
      process.kill(Number(command), signal)
    },
    atHeldCall() {
      // A call may be held on a thread of libuv's pool (an fsync of node:sqlite's backup), not the main one.
      return threadsAtCall((command) => readdirSync(`/proc/${command}/task`))
    },
    mainThreadAtHeldCall() {
      return threadsAtCall((command) => [command])
    },
  }
}
