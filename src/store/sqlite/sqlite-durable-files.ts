import { closeSync, fsyncSync, openSync, renameSync, rmSync } from 'node:fs'
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

/** A temporary name beside `path` (same directory, so the final rename is atomic on one file system). */
export function temporaryBeside(path: string, purpose: string): string {
  return join(dirname(path), `.${basename(path)}.${purpose}-${process.pid}.tmp`)
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
