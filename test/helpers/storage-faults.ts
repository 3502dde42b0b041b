import assert from 'node:assert/strict'
import { execFileSync, spawnSync } from 'node:child_process'
import { closeSync, existsSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { waitFor } from './bounded-wait.ts'
import type { Cleanup } from './cleanup.ts'
import { logLines, type ServeProcess, waitForLog } from './cli-process.ts'
import { checkedFetch } from './conformance-fetch.ts'
import { assertUnavailable, type PetLedger } from './pet-ledger.ts'
import { hasCommand, type Lack, suiteNeeding } from './suite-requirements.ts'

/** The log lines that report a storage fault (as opposed to the per-request lines of refused requests). */
export function storageFaultLines(server: ServeProcess) {
  return logLines(server).filter((line) => line.level === 50 && line.storageFault !== undefined)
}

/**
 * What every storage fault must look like from outside: creates (one at a time and a batch of them)
 * refused with 503 and Retry-After, /readyz 503, and one error line naming the fault — not one per request.
 */
export async function assertStorageFaultReported(
  server: ServeProcess,
  ledger: PetLedger,
  fault: string,
): Promise<void> {
  for (let i = 0; i < 3; i++) await assertUnavailable(await ledger.create(server), `create ${i}`)
  const batch = await Promise.all(Array.from({ length: 10 }, () => ledger.create(server)))
  for (const response of batch) await assertUnavailable(response, 'a create of a batch')
  const readiness = await checkedFetch(server.origin, '/readyz')
  assert.equal(readiness.status, 503, 'not ready while the fault lasts')
  assert.ok(readiness.headers.get('retry-after'))
  await waitForLog(server, () => (storageFaultLines(server).length > 0 ? true : undefined))
  const faults = storageFaultLines(server)
  assert.equal(faults.length, 1, `one error line:\n${JSON.stringify(faults, null, 1)}`)
  assert.equal(faults[0]?.storageFault, fault)
}

/** Polls /readyz until it answers `status`; resolves with that answer's body, fails after `timeoutMs`. */
export function readinessBecomes(
  server: ServeProcess,
  status: 200 | 503,
  timeoutMs = 10_000,
  saying: (body: { status?: string; message?: string }) => boolean = () => true,
) {
  let body: { status?: string; message?: string } = {}
  return waitFor(
    async () => {
      const response = await checkedFetch(server.origin, '/readyz')
      body = (await response.json()) as typeof body
      return response.status === status && saying(body) ? body : undefined
    },
    () => `/readyz not ${status}: ${JSON.stringify(body)}`,
    { timeoutMs, everyMs: 50 },
  )
}

/** Polls /readyz until it answers 200; fails after `timeoutMs`. */
export async function waitUntilReady(server: ServeProcess, timeoutMs = 10_000): Promise<void> {
  await readinessBecomes(server, 200, timeoutMs)
}

// The Debian package that provides each tool the storage-fault suites run.
const PACKAGE_OF: Record<string, string> = {
  mount: 'mount',
  losetup: 'mount',
  'mkfs.ext4': 'e2fsprogs',
  e2fsck: 'e2fsprogs',
  prlimit: 'util-linux',
}

function mountingLack(tools: string[]): Lack | undefined {
  if (process.getuid?.() !== 0)
    return { missing: 'mounting a file system needs root', remedy: 'sudo npm test' }
  const missing = ['mount', ...tools].filter((tool) => !hasCommand(tool))
  if (missing.length > 0) {
    const packages = [...new Set(missing.map((tool) => PACKAGE_OF[tool] ?? tool))]
    return {
      missing: `no ${missing.join(', ')} on this machine`,
      remedy: `apt-get install ${packages.join(' ')}`,
    }
  }
  if (tools.includes('losetup') && !existsSync('/dev/loop-control'))
    return { missing: 'no loop devices (/dev/loop-control)', remedy: 'modprobe loop' }
  return undefined
}

/**
 * `describe` options for suites that mount file systems: skipped with one line when not root (or without
 * the tools named) — except under CI, which runs as root and must run them.
 */
export function mountingSuiteOptions(tools: string[] = []): { skip?: string } {
  return suiteNeeding('the storage-fault suites', mountingLack(tools))
}

function mountPoint(t: Cleanup): string {
  const directory = mkdtempSync(join(tmpdir(), 'petstore-mount-'))
  t.after(() => {
    // Lazy: a server killed a moment ago may still hold files; the mount goes once they are closed.
    spawnSync('umount', ['-l', directory])
    rmSync(directory, { recursive: true, force: true })
  })
  return directory
}

/**
 * A tmpfs of `bytes` (and at most `inodes` files and directories, if given) mounted on a new directory,
 * unmounted after the test.
 */
export function mountTmpfs(t: Cleanup, bytes: number, inodes?: number): string {
  const directory = mountPoint(t)
  const limit = inodes === undefined ? '' : `,nr_inodes=${inodes}`
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${bytes}${limit}`, 'tmpfs', directory])
  return directory
}

/**
 * An ext4 file system of `bytes` on a loop device whose image lives on a tmpfs (no real disk involved),
 * mounted with `errors=remount-ro`, as data volumes usually are. `abort` makes the kernel turn it
 * read-only as it does on a disk error; `repair` unmounts, checks and mounts it again, read-write.
 */
export function mountExt4(t: Cleanup, bytes: number) {
  const image = join(mountTmpfs(t, bytes + 4 * 1024 * 1024), 'volume.img')
  execFileSync('truncate', ['-s', String(bytes), image])
  execFileSync('mkfs.ext4', ['-q', '-F', image])
  const directory = mountPoint(t)
  const mount = () => execFileSync('mount', ['-o', 'loop,errors=remount-ro', image, directory])
  mount()
  return {
    directory,
    abort: () => execFileSync('mount', ['-o', 'remount,abort', directory]),
    repair() {
      execFileSync('umount', [directory])
      // e2fsck exits 1 when it fixed something (the aborted journal), which is expected here.
      const check = spawnSync('e2fsck', ['-f', '-y', image], { encoding: 'utf8' })
      assert.ok(check.status === 0 || check.status === 1, `e2fsck: ${check.stdout}${check.stderr}`)
      mount()
    },
  }
}

/** Writes a file into `directory` until the file system has no space left; returns its path. */
export function fillFileSystem(directory: string, name = 'filler'): string {
  const path = join(directory, name)
  const fd = openSync(path, 'w')
  try {
    for (const size of [1024 * 1024, 4096, 1]) {
      const chunk = Buffer.alloc(size)
      try {
        for (;;) writeSync(fd, chunk)
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error
      }
    }
  } finally {
    closeSync(fd)
  }
  return path
}
