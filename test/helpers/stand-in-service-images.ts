import { createHash } from 'node:crypto'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { podman } from './podman.ts'
import { debootstrapRootfs, ensureStandIn, importRootfs, STAND_IN_LABEL } from './stand-in-images.ts'

// The PostgreSQL and Redis images deploy/compose.yaml names cannot be pulled in CI: stand-ins are built
// under those exact names from Debian 12's packages (stand-ins/*.Containerfile), on a debootstrap base; so
// is a machine booting systemd, for the unit file.
const STAND_INS = fileURLToPath(new URL('stand-ins/', import.meta.url))
const SUITE = 'bookworm'
const BASE = `localhost/petstore-test-stand-in-debian:${SUITE}`
const BASE_MADE_FROM = `v1 debian-${SUITE} minbase`
const SERVICES = {
  'docker.io/library/postgres:15': 'postgres',
  'docker.io/library/redis:7': 'redis',
  'localhost/petstore-test-vm:bookworm': 'vm',
} as const

/** What a service stand-in is made from: its Containerfile and entrypoint (if it has one), on the base. */
function madeFrom(service: string): string {
  const hash = createHash('sha256')
  for (const file of [`${service}.Containerfile`, `${service}-entrypoint.sh`]) {
    const path = join(STAND_INS, file)
    if (existsSync(path)) hash.update(readFileSync(path))
  }
  return `v1 ${service} ${hash.digest('hex').slice(0, 12)} on ${BASE_MADE_FROM}`
}

/**
 * Makes sure each image the compose file runs besides the service exists: a real one is used as it is, a
 * stand-in is reused while what it was made from is unchanged, otherwise one is built (the Debian base
 * about a minute, once; each stand-in a minute of apt). Reports what it did through `note`.
 */
export async function ensureStandInServiceImages(
  images: string[],
  note: (message: string) => void,
): Promise<void> {
  for (const name of images) {
    const service = SERVICES[name as keyof typeof SERVICES]
    if (service === undefined) throw new Error(`no stand-in for ${name}: add one to test/helpers/stand-ins`)
    const wanted = madeFrom(service)
    const build = async () => {
      await ensureStandIn(BASE, BASE_MADE_FROM, assembleBase, note)
      await podman(
        [
          'build',
          '--pull=never',
          '--runtime',
          'runc',
          '--label',
          `${STAND_IN_LABEL}=${wanted}`,
          '--tag',
          name,
          '--file',
          join(STAND_INS, `${service}.Containerfile`),
          STAND_INS,
        ],
        15 * 60_000,
      )
    }
    await ensureStandIn(name, wanted, build, note)
  }
}

async function assembleBase(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), 'petstore-stand-in-'))
  try {
    const rootfs = join(work, 'rootfs')
    await debootstrapRootfs(SUITE, rootfs)
    const changes = [
      'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
      'CMD ["bash"]',
      `LABEL ${STAND_IN_LABEL}="${BASE_MADE_FROM}"`,
    ]
    await importRootfs(rootfs, work, changes, BASE)
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
}
