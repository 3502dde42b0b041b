import assert from 'node:assert/strict'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Cleanup } from './cleanup.ts'
import { podman, podmanQuietly, RUNTIME_FLAGS, run } from './podman.ts'

export interface RunningContainer {
  name: string
  /** `http://127.0.0.1:<published port>` of the API, and of the metrics listener. */
  api: string
  metrics: string
  logs(): Promise<string>
}

let containers = 0

/**
 * Starts the image as the README runs it (read-only root, no capability, no new privileges, data on the
 * volume, the API and metrics ports published) plus this machine's runtime flags, and waits until /readyz answers 200. No tmpfs either
 * (`--read-only-tmpfs=false`): the volume is the only place the service may write. Removed after the test.
 */
export async function startContainer(
  t: Cleanup,
  image: string,
  volume: string,
  env: Record<string, string>,
  mounts: string[] = [],
  runFlags: string[] = [],
): Promise<RunningContainer> {
  const name = `petstore-test-${process.pid}-${++containers}`
  t.after(() => podmanQuietly(['rm', '--force', '--time', '0', name]))
  const environment = Object.entries(env).flatMap(([key, value]) => ['--env', `${key}=${value}`])
  const volumes = mounts.flatMap((mount) => ['--volume', mount])
  await podman([
    'run',
    '--detach',
    '--name',
    name,
    ...RUNTIME_FLAGS,
    ...runFlags,
    '--cap-drop=all',
    '--security-opt=no-new-privileges',
    '--read-only',
    '--read-only-tmpfs=false',
    '--volume',
    `${volume}:/data`,
    ...volumes,
    '--publish',
    '127.0.0.1::8080',
    '--publish',
    '127.0.0.1::9464',
    ...environment,
    image,
  ])
  const published = async (port: number) => `http://${(await podman(['port', name, `${port}/tcp`])).trim()}`
  const container = {
    name,
    api: await published(8080),
    metrics: await published(9464),
    // Both streams, as the service wrote them (podman logs gives the container's stderr on its own).
    logs: () => run('sh', ['-c', 'podman logs "$1" 2>&1', 'sh', name]).catch((error: Error) => error.message),
  }
  await waitUntilReady(container)
  return container
}

async function waitUntilReady(container: RunningContainer, timeoutMs = 90_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const status = await fetch(`${container.api}/readyz`, { signal: AbortSignal.timeout(5000) }).then(
      (response) => response.status,
      () => 0,
    )
    if (status === 200) return
    const state = (await podman(['inspect', '--format', '{{.State.Status}}', container.name])).trim()
    if (state !== 'running' || Date.now() > deadline) {
      assert.fail(
        `${container.name} not ready (state ${state}, /readyz ${status}):\n${await container.logs()}`,
      )
    }
    await sleep(200)
  }
}

/**
 * Stops the container as an orchestrator does (SIGTERM; SIGKILL only after 20 s, as the README stops it) and returns its exit code
 * and how long the stop took.
 */
export async function stopContainer(
  container: RunningContainer,
): Promise<{ exitCode: number; seconds: number }> {
  const started = performance.now()
  await podman(['stop', '--time', '20', container.name], 60_000)
  const seconds = (performance.now() - started) / 1000
  const exitCode = Number(
    (await podman(['inspect', '--format', '{{.State.ExitCode}}', container.name])).trim(),
  )
  return { exitCode, seconds }
}
