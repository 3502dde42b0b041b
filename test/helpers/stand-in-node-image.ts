import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { run } from './podman.ts'
import { debootstrapRootfs, ensureStandIn, importRootfs, STAND_IN_LABEL } from './stand-in-images.ts'

// No image registry is reachable from CI, so the official Node.js image the Containerfile starts FROM is
// stood in for by one assembled here, under its exact name, with what the build and the service use from
// it: Debian (debootstrap), node and npm in /usr/local, and the `node` user (1000:1000).
const REPOSITORY = fileURLToPath(new URL('../../', import.meta.url))
const OFFICIAL_NAME = /^docker\.io\/library\/node:(\d+\.\d+\.\d+)-([a-z]+)-slim$/
const NPM_MAJOR = '11'
// The host's npm may reach the registry through a TLS-intercepting proxy whose CA it trusts, through
// NODE_EXTRA_CA_CERTS or its own `cafile` (which npm hands the scripts it runs as npm_config_cafile); the
// stand-in trusts the same, as anyone building the real image behind such a proxy must.
const HOST_TRUST = process.env.NODE_EXTRA_CA_CERTS || process.env.npm_config_cafile

/** The one base image every FROM of the Containerfile names, checked to be the official Node.js slim image. */
export function containerfileBase(containerfile: string): {
  name: string
  nodeVersion: string
  suite: string
} {
  const names = new Set([...containerfile.matchAll(/^FROM\s+(\S+)/gm)].map((match) => match[1] ?? ''))
  assert.equal(names.size, 1, `every stage starts from one base image, got ${[...names].join(', ')}`)
  const [name = ''] = names
  const parts = OFFICIAL_NAME.exec(name)
  assert.ok(parts, `${name} is not the official Node.js slim image with a pinned version`)
  return { name, nodeVersion: parts[1] ?? '', suite: parts[2] ?? '' }
}

/** What the stand-in is made of: a stand-in made otherwise is rebuilt. */
function fingerprint(nodeVersion: string, suite: string): string {
  const trust = HOST_TRUST && existsSync(HOST_TRUST) ? readFileSync(HOST_TRUST) : ''
  const trustHash = createHash('sha256').update(trust).digest('hex').slice(0, 12)
  return `v1 node-${nodeVersion} npm-${NPM_MAJOR} debian-${suite} trust-${trustHash}`
}

/**
 * Makes sure `name` exists locally: a real image of that name (no stand-in label) is used as it is; a
 * stand-in made by this helper is reused while its fingerprint matches; otherwise one is assembled (about
 * a minute: debootstrap fetches some 90 packages). Reports what it did through `note`.
 */
export function ensureStandInNodeImage(
  base: { name: string; nodeVersion: string; suite: string },
  note: (message: string) => void,
): Promise<void> {
  const wanted = fingerprint(base.nodeVersion, base.suite)
  return ensureStandIn(base.name, wanted, () => assemble(base, wanted), note)
}

async function assemble(
  base: { name: string; nodeVersion: string; suite: string },
  label: string,
): Promise<void> {
  const node = join(REPOSITORY, 'node_modules/node/bin/node')
  assert.ok(
    existsSync(node),
    `${node} is missing: run npm install (the project's Node.js is a devDependency)`,
  )
  const version = (await run(node, ['--version'])).trim()
  assert.equal(version, `v${base.nodeVersion}`, "the Containerfile's Node.js must be the project's own")

  const work = mkdtempSync(join(tmpdir(), 'petstore-stand-in-'))
  try {
    const rootfs = join(work, 'rootfs')
    await debootstrapRootfs(base.suite, rootfs)

    mkdirSync(join(rootfs, 'usr/local/lib/node_modules/npm'), { recursive: true })
    copyFileSync(node, join(rootfs, 'usr/local/bin/node'))
    const tarball = (
      await run('npm', ['pack', `npm@${NPM_MAJOR}`, '--pack-destination', work, '--silent'], 120_000)
    ).trim()
    await run('tar', [
      '-xzf',
      join(work, tarball),
      '-C',
      join(rootfs, 'usr/local/lib/node_modules/npm'),
      '--strip-components=1',
    ])
    symlinkSync('../lib/node_modules/npm/bin/npm-cli.js', join(rootfs, 'usr/local/bin/npm'))
    symlinkSync('../lib/node_modules/npm/bin/npx-cli.js', join(rootfs, 'usr/local/bin/npx'))
    await run('chroot', [
      rootfs,
      'sh',
      '-c',
      'groupadd --gid 1000 node && useradd --uid 1000 --gid node --shell /bin/bash --create-home node',
    ])

    const changes = [
      'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
      `ENV NODE_VERSION=${base.nodeVersion}`,
      'CMD ["node"]',
      `LABEL ${STAND_IN_LABEL}="${label}"`,
    ]
    if (HOST_TRUST && existsSync(HOST_TRUST)) {
      mkdirSync(join(rootfs, 'usr/local/share/ca-certificates'), { recursive: true })
      copyFileSync(HOST_TRUST, join(rootfs, 'usr/local/share/ca-certificates/host-trust.crt'))
      changes.push('ENV NODE_EXTRA_CA_CERTS=/usr/local/share/ca-certificates/host-trust.crt')
    }
    await importRootfs(rootfs, work, changes, base.name)
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
}
