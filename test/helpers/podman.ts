import { execFile } from 'node:child_process'
import { hasCommand, type Lack } from './suite-requirements.ts'

/**
 * What this machine's podman needs to run a container: runc (Debian's default crun fails on its cgroups)
 * and ulimits below the host's, which runc cannot raise inside the container.
 */
export const RUNTIME_FLAGS = [
  '--runtime',
  'runc',
  '--ulimit',
  'nofile=1024:1024',
  '--ulimit',
  'nproc=1024:1024',
]

/** What the container suites need from the machine, if anything is missing. */
export function containerLack(commands: string[]): Lack | undefined {
  const missing = commands.filter((command) => !hasCommand(command))
  if (missing.length > 0) {
    return {
      missing: `no ${missing.join(', ')} on this machine`,
      remedy: `apt-get install ${missing.join(' ')}`,
    }
  }
  if (process.getuid?.() !== 0) {
    return { missing: 'not root (debootstrap and podman with runc need it)', remedy: 'run the suite as root' }
  }
  return undefined
}

/** Runs a command and resolves with its standard output; fails naming it, with its stderr, or after `timeoutMs`. */
export function run(
  command: string,
  args: string[],
  timeoutMs = 60_000,
  env: NodeJS.ProcessEnv = process.env,
): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      command,
      args,
      { env, timeout: timeoutMs, killSignal: 'SIGKILL', maxBuffer: 256 * 1024 * 1024, encoding: 'utf8' },
      (error, stdout, stderr) => {
        if (error === null) return resolve(stdout)
        const why = error.killed ? `did not finish within ${timeoutMs} ms` : `failed (${error.code})`
        reject(new Error(`${command} ${args.join(' ')} ${why}:\n${stderr.slice(-4000)}`))
      },
    )
  })
}

/** `podman …`, bounded by `timeoutMs`. */
export function podman(args: string[], timeoutMs = 60_000): Promise<string> {
  return run('podman', args, timeoutMs)
}

/** `podman …` when its failure does not matter (removing what may already be gone). */
export async function podmanQuietly(args: string[]): Promise<void> {
  await podman(args).catch(() => undefined)
}
