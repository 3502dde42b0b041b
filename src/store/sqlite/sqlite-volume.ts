import { readFileSync, realpathSync, statfsSync } from 'node:fs'
import { dirname } from 'node:path'

// Readiness wants this much free space on the database's volume, and twice as much to be ready again,
// so a volume hovering at the floor does not flap (docs/decisions.md, "Storage faults (SQLite)").
export const FREE_BYTES_FLOOR = 1024 * 1024

export interface VolumeState {
  fault: 'disk_full' | 'read_only' | undefined
  /** Free bytes for this process (root may use the blocks reserved for it); undefined if unknown. */
  freeBytes: number | undefined
}

/** `\040`-style escapes of /proc mount points (space, tab, newline, backslash) decoded. */
function unescapeMountPoint(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(Number.parseInt(octal, 8)))
}

/**
 * Whether the mount holding `directory` is read-only, from /proc/self/mountinfo: `ro` in its own or its
 * file system's options, or ext4's `emergency_ro` (what the kernel sets on disk errors since Linux 6.10,
 * where access(2) still says writable). Undefined where /proc is not there to ask.
 */
function mountIsReadOnly(directory: string): boolean | undefined {
  let table: string
  try {
    table = readFileSync('/proc/self/mountinfo', 'utf8')
  } catch {
    return undefined
  }
  let found: { length: number; readOnly: boolean } | undefined
  for (const line of table.split('\n')) {
    const [before, after] = line.split(' - ')
    const fields = before?.split(' ') ?? []
    const mountPoint = fields[4] === undefined ? undefined : unescapeMountPoint(fields[4])
    if (mountPoint === undefined || after === undefined) continue
    const inside =
      directory === mountPoint || directory.startsWith(mountPoint === '/' ? '/' : `${mountPoint}/`)
    // The deepest mount holding the directory; of mounts stacked on one point, the last (the one seen).
    if (!inside || (found !== undefined && mountPoint.length < found.length)) continue
    const own = fields[5]?.split(',') ?? []
    const fileSystem = after.split(' ')[2]?.split(',') ?? []
    const readOnly = own.includes('ro') || fileSystem.includes('ro') || fileSystem.includes('emergency_ro')
    found = { length: mountPoint.length, readOnly }
  }
  return found?.readOnly
}

/**
 * The volume holding a database file, as readiness sees it without writing: full when less than the
 * floor is free, read-only when the mount says so. A statfs and a read of the mount table (tens of µs).
 */
export class SqliteVolume {
  readonly #directory: string

  constructor(databasePath: string) {
    this.#directory = realpathSync(dirname(databasePath))
  }

  /** The volume's state; `wasFull` asks for twice the floor before it counts as no longer full. */
  check(wasFull: boolean): VolumeState {
    if (mountIsReadOnly(this.#directory)) return { fault: 'read_only', freeBytes: undefined }
    let freeBytes: number
    try {
      const volume = statfsSync(this.#directory)
      const blocks = process.geteuid?.() === 0 ? volume.bfree : volume.bavail
      // `frsize` (the unit of the block counts) came with Node.js 24.16; before it, `bsize` is the same
      // on Linux's common file systems. Synchronous: SQLite's own reads of this volume are too.
      freeBytes = blocks * ((volume as { frsize?: number }).frsize ?? volume.bsize)
    } catch {
      return { fault: undefined, freeBytes: undefined }
    }
    if (!Number.isFinite(freeBytes)) return { fault: undefined, freeBytes: undefined }
    const floor = wasFull ? 2 * FREE_BYTES_FLOOR : FREE_BYTES_FLOOR
    return { fault: freeBytes < floor ? 'disk_full' : undefined, freeBytes }
  }
}
