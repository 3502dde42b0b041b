import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { podman, run } from './podman.ts'

/** The label every stand-in image carries: what it was made from. An image without it is a real one. */
export const STAND_IN_LABEL = 'petstore.test.stand-in'

export type ImageUnderName =
  | { kind: 'none' }
  | { kind: 'real' }
  | { kind: 'current' }
  | { kind: 'stale'; id: string }

/**
 * What holds `name` locally: nothing, a real image (never to be replaced), the stand-in made from `wanted`
 * (to reuse), or a stand-in made otherwise (to rebuild, then remove by `id`).
 */
export async function imageUnderName(name: string, wanted: string): Promise<ImageUnderName> {
  const format = `{{.Id}} {{index .Labels "${STAND_IN_LABEL}"}}`
  const existing = await podman(['image', 'inspect', '--format', format, name]).then(
    (out) => out.trim(),
    () => undefined,
  )
  if (existing === undefined) return { kind: 'none' }
  const [id = '', ...label] = existing.split(' ')
  const madeBy = label.join(' ').replace('<no value>', '')
  if (madeBy === '') return { kind: 'real' }
  return madeBy === wanted ? { kind: 'current' } : { kind: 'stale', id }
}

const MIRROR = 'http://deb.debian.org/debian'

/** A minimal Debian `suite` (debootstrap minbase, about a minute) in `rootfs`, without docs or apt lists. */
export async function debootstrapRootfs(suite: string, rootfs: string): Promise<void> {
  await run('debootstrap', ['--variant=minbase', suite, rootfs, MIRROR], 10 * 60_000)
  await run('sh', [
    '-c',
    'cd "$1" && rm -rf usr/share/doc/* usr/share/man/* var/lib/apt/lists/* var/cache/apt/*',
    'sh',
    rootfs,
  ])
}

/** `rootfs` as the image `name`, with Containerfile-style `changes` (ENV, CMD, LABEL…); `work` holds the archive. */
export async function importRootfs(rootfs: string, work: string, changes: string[], name: string) {
  const archive = join(work, 'rootfs.tar')
  await run('tar', ['-C', rootfs, '-cf', archive, '.'], 5 * 60_000)
  await podman(['import', ...changes.flatMap((change) => ['--change', change]), archive, name], 5 * 60_000)
}

// Held while a suite checks and builds its stand-ins: two suites that need the same image, run at once on a
// machine without it, would both build it (a minute or more each, on the same two cores).
const BUILD_LOCK = join(tmpdir(), 'petstore-test-stand-ins.lock')
const BUILD_LOCK_WAIT_MS = 30 * 60_000

/** Whether the process that took the lock is gone (a killed run), so the lock is free. */
function lockLeft(): boolean {
  const pid = Number(readFileSync(join(BUILD_LOCK, 'pid'), { encoding: 'utf8', flag: 'a+' }))
  if (!Number.isInteger(pid) || pid <= 0) return false
  try {
    process.kill(pid, 0)
    return false
  } catch {
    return true
  }
}

/**
 * Runs `build` while no other test process on this machine builds stand-ins (a directory made as the lock:
 * its creation is atomic); a lock whose process is gone is taken over.
 */
export async function oneBuildAtATime<T>(build: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + BUILD_LOCK_WAIT_MS
  for (;;) {
    try {
      mkdirSync(BUILD_LOCK)
      writeFileSync(join(BUILD_LOCK, 'pid'), String(process.pid))
      break
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
      if (lockLeft()) rmSync(BUILD_LOCK, { recursive: true, force: true })
      else if (Date.now() > deadline) throw new Error(`${BUILD_LOCK} held for ${BUILD_LOCK_WAIT_MS} ms`)
      else await sleep(500)
    }
  }
  try {
    return await build()
  } finally {
    rmSync(BUILD_LOCK, { recursive: true, force: true })
  }
}
