import { AsyncLocalStorage } from 'node:async_hooks'
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { podman, podmanQuietly, run } from './podman.ts'

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
async function imageUnderName(name: string, wanted: string): Promise<ImageUnderName> {
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

// Set while this process holds the lock: a stand-in built on another (a service's on the Debian base) takes
// it once.
const holding = new AsyncLocalStorage<true>()

/**
 * Runs `build` while no other test process on this machine builds stand-ins (a directory made as the lock:
 * its creation is atomic); a lock whose process is gone is taken over.
 */
async function oneBuildAtATime<T>(build: () => Promise<T>): Promise<T> {
  if (holding.getStore()) return build()
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
    return await holding.run(true, build)
  } finally {
    rmSync(BUILD_LOCK, { recursive: true, force: true })
  }
}

/**
 * Makes sure the image `name` exists: a real one (no stand-in label) is used as it is, the stand-in made
 * from `wanted` is reused, otherwise `build` makes it (labelled `wanted`) and the stale one is removed; one
 * test process at a time on this machine. Reports what it did through `note`.
 */
export function ensureStandIn(
  name: string,
  wanted: string,
  build: () => Promise<void>,
  note: (message: string) => void,
): Promise<void> {
  return oneBuildAtATime(async () => {
    const existing = await imageUnderName(name, wanted)
    if (existing.kind === 'real') return note(`${name}: a real image, used as it is`)
    if (existing.kind === 'current') return note(`${name}: the stand-in built earlier (${wanted})`)
    const started = Date.now()
    await build()
    if (existing.kind === 'stale') await podmanQuietly(['rmi', existing.id])
    note(`${name}: stand-in built in ${((Date.now() - started) / 1000).toFixed(0)} s (${wanted})`)
  })
}
