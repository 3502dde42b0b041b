import { join } from 'node:path'
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
