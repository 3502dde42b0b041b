import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Cleanup } from './cleanup.ts'
import { temporaryDirectory } from './cleanup.ts'
import { podman, run } from './podman.ts'

// What this machine's podman needs (podman.ts's RUNTIME_FLAGS), as a containers.conf: podman-compose then
// runs the README's own command line, and every container it starts (and every build step) gets them.
const MACHINE_CONF = `[containers]
default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]
[engine]
runtime = "runc"
`

export interface ComposeStack {
  /** `podman-compose -p <project> -f <file> …args`, with this machine's containers.conf; its stdout. */
  compose(args: string[], timeoutMs?: number): Promise<string>
  /** The name podman gives a service's container. */
  container(service: string): string
}

/** podman-compose on `file` under project name `project`, its leftovers removed before and after. */
export async function composeStack(t: Cleanup, file: string, project: string): Promise<ComposeStack> {
  const conf = join(temporaryDirectory(t), 'containers.conf')
  writeFileSync(conf, MACHINE_CONF)
  const env = { ...process.env, CONTAINERS_CONF: conf }
  const stack: ComposeStack = {
    compose: (args, timeoutMs = 120_000) =>
      run('podman-compose', ['-p', project, '-f', file, ...args], timeoutMs, env),
    container: (service) => `${project}_${service}_1`,
  }
  const remove = async () => {
    await stack.compose(['down', '-v', '-t', '20']).catch(() => undefined)
    await podman(['network', 'rm', '--force', `${project}_default`]).catch(() => undefined)
  }
  await remove()
  t.after(remove)
  return stack
}

/** Waits until `url` answers 200, failing with the container's state and log after `timeoutMs`. */
export async function waitForReady(url: string, container: string, timeoutMs = 180_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const status = await fetch(url, { signal: AbortSignal.timeout(5000) }).then(
      (response) => response.status,
      () => 0,
    )
    if (status === 200) return
    if (Date.now() > deadline) {
      const state = await podman(['inspect', '--format', '{{.State.Status}}', container]).catch(String)
      const logs = await run('sh', ['-c', 'podman logs "$1" 2>&1 | tail -40', 'sh', container]).catch(String)
      assert.fail(
        `${url} not 200 within ${timeoutMs} ms (last ${status}; ${container} ${state.trim()}):\n${logs}`,
      )
    }
    await sleep(500)
  }
}

/**
 * The exit code of each container once it exits, watched from now on (`podman wait`): read even when
 * the container is removed right after, as `down` does.
 */
export function exitCodes(containers: string[], timeoutMs = 120_000): Promise<number[]> {
  return Promise.all(containers.map(async (name) => Number((await podman(['wait', name], timeoutMs)).trim())))
}
