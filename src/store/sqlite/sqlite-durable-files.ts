import { randomBytes } from 'node:crypto'
import {
  closeSync,
  fchmodSync,
  fsyncSync,
  lstatSync,
  openSync,
  readdirSync,
  readSync,
  renameSync,
  rmSync,
  statSync,
  writeSync,
} from 'node:fs'
import { hostname } from 'node:os'
import { basename, dirname, join } from 'node:path'

/** Flushes a file (or a directory's entries) to the disk. */
export function fsyncPath(path: string): void {
  const fd = openSync(path, 'r')
  try {
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
}

// The host a copy is made on, as a name can hold it: a process id says whether its maker runs only there.
const HOST =
  hostname()
    .replace(/[^A-Za-z0-9_-]/g, '_')
    .slice(0, 64) || 'host'

/**
 * A temporary name beside `path` (same directory, so the final rename is atomic on one file system), new
 * at each call: two containers' commands, each PID 1, once took one name and removed each other's copy.
 * It names the process and its host, for `removeAbandoned`.
 */
export function temporaryBeside(path: string, purpose: string): string {
  const unique = `${process.pid}-${HOST}-${randomBytes(4).toString('hex')}`
  const tail = `.${purpose}-${unique}.tmp`
  return join(dirname(path), `${stemOf(path, Buffer.byteLength(tail))}${tail}`)
}

// A file name's limit on Linux file systems (NAME_MAX), less SQLite's longest suffix for a companion.
const NAME_BYTES = 255 - '-journal'.length

/** `.` and `path`'s name, cut (whole characters) so that `tailBytes` more still make a name a file can have. */
function stemOf(path: string, tailBytes: number): string {
  let stem = `.${basename(path)}`
  while (Buffer.byteLength(stem) + tailBytes > NAME_BYTES) stem = stem.slice(0, stem.length - 1)
  // Not half of a surrogate pair: a name must be whole UTF-8.
  return /[\uD800-\uDBFF]$/.test(stem) ? stem.slice(0, -1) : stem
}

/**
 * Removes the hidden copies (`temporaryBeside(…, purpose)`, with their SQLite companions) a killed command
 * left beside `path`: this host's whose process is gone, and any a day old. Best effort: one that cannot be
 * removed (another user's) stays (docs/decisions.md, "A killed backup or restore leaves nothing for long").
 */
export function removeAbandoned(path: string, purpose: string): void {
  // Its copies' names begin with its own and a dot, or with as much of it as `temporaryBeside` kept for
  // the longest process id (7 digits).
  const stem = stemOf(path, Buffer.byteLength(`.${purpose}-9999999-${HOST}-00000000.tmp`))
  const ours = stem === `.${basename(path)}` ? `${stem}.` : stem
  const name = new RegExp(`^\\..+\\.${purpose}-(\\d+)(?:-([\\w-]+)-[0-9a-f]{8})?\\.tmp(-journal|-wal|-shm)?$`)
  let entries: string[]
  try {
    entries = readdirSync(dirname(path))
  } catch {
    return
  }
  for (const entry of entries) {
    const found = name.exec(entry)
    const pid = Number(found?.[1])
    if (!(pid > 0)) continue
    const file = join(dirname(path), entry)
    const here = found?.[2] === undefined || found[2] === HOST
    const gone = entry.startsWith(ours) && here && pid !== process.pid && !running(pid)
    const dayOld = Date.now() - (statOrNothing(file)?.mtimeMs ?? Date.now()) > ABANDONED_AFTER_MS
    if (!gone && !dayOld) continue
    try {
      rmSync(file, { force: true })
    } catch {}
  }
}

// Longer than any backup or restore leaves its copy unwritten (its integrity check, on a large database).
const ABANDONED_AFTER_MS = 24 * 60 * 60 * 1000

/** `file`'s stats, or undefined when nothing is there (a path through a file, `db/` for one, included). */
export function statOrNothing(file: string) {
  try {
    return statSync(file, { throwIfNoEntry: false })
  } catch {
    return undefined
  }
}

/** `file`'s own stats (a symbolic link's, not its target's), or undefined when nothing is there. */
export function lstatOrNothing(file: string) {
  try {
    return lstatSync(file, { throwIfNoEntry: false })
  } catch {
    return undefined
  }
}

/** Whether a process of that id exists (one of another user's counts: a signal to it is refused, EPERM). */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/**
 * Moves a finished file into place: synced first, renamed over `path` in one step, then the directory
 * synced, so after a crash `path` is either the old file or the whole new one.
 */
export function renameDurably(temporary: string, path: string): void {
  fsyncPath(temporary)
  renameSync(temporary, path)
  fsyncPath(dirname(path))
}

/** The files SQLite may keep beside a database, by the suffix it adds to the database's name. */
export const COMPANION_SUFFIXES = ['-journal', '-wal', '-shm'] as const

/** Removes a SQLite file and the companions SQLite may have left beside it. */
export function removeWithCompanions(path: string): void {
  for (const suffix of ['', ...COMPANION_SUFFIXES]) rmSync(`${path}${suffix}`, { force: true })
}

// A copy's reads and writes: large enough that a database of a few hundred MB takes a few hundred calls.
const COPY_CHUNK_BYTES = 1024 * 1024

/**
 * Copies `from` into a new file `to`, for its owner alone from its first byte: `copyFileSync` makes the
 * file with the source's mode and changes it only once the copy is done, so another user could open a
 * backup kept 0644 meanwhile, and read it for good. A file already at `to` (one planted there) fails it.
 */
export function copyToNewPrivateFile(from: string, to: string): void {
  const source = openSync(from, 'r')
  try {
    const target = openSync(to, 'wx', 0o600)
    try {
      // Whatever the umask left, never more than the owner's.
      fchmodSync(target, 0o600)
      const chunk = Buffer.allocUnsafe(COPY_CHUNK_BYTES)
      for (let read = readSync(source, chunk); read > 0; read = readSync(source, chunk)) {
        for (let written = 0; written < read; ) written += writeSync(target, chunk, written, read - written)
      }
    } finally {
      closeSync(target)
    }
  } finally {
    closeSync(source)
  }
}
