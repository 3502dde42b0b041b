import { waitFor } from './bounded-wait.ts'
import { podman, RUNTIME_FLAGS } from './podman.ts'

/** The stand-in Debian 12 machine that boots systemd (stand-ins/vm.Containerfile). */
export const VM_IMAGE = 'localhost/petstore-test-vm:bookworm'

/**
 * Starts `image` as `container`, a machine: systemd its PID 1, podman's `flags` given before the image and
 * `command` after it. A container left by a run that was killed, under a pid used again, is replaced.
 */
export async function startMachine(
  container: string,
  image: string,
  flags: string[],
  command: string[] = [],
) {
  await podman([
    'run',
    '--detach',
    '--replace',
    '--name',
    container,
    ...RUNTIME_FLAGS,
    '--systemd=always',
    ...flags,
    image,
    ...command,
  ])
}

/**
 * Waits until the systemd of `container` has booted, and resolves with the state it booted to ("running",
 * "degraded"…). Until systemd has set itself up, `systemctl is-system-running` says "offline" (exit 1) or
 * cannot reach its bus: both are asked again, never taken for the state (a busy machine is slow there).
 */
export function bootedState(container: string, timeoutMs: number): Promise<string> {
  // `; true`: the state is on stdout whatever the exit status; the bus's failure is on stderr.
  const ask = ['exec', container, 'sh', '-c', 'systemctl is-system-running --wait 2>&1; true']
  return waitFor(
    async () => {
      const said = (await podman(ask, timeoutMs)).trim()
      return said === 'offline' || /Failed to connect to bus/.test(said) ? undefined : said
    },
    'systemd did not start',
    { timeoutMs, everyMs: 100 },
  )
}
