import { readdirSync, readlinkSync, statSync } from 'node:fs'

// In the order a change is reported: the database before its companions.
const WATCHED = ['database', 'wal', 'shm'] as const
export type WatchedFile = (typeof WATCHED)[number]

/** The file a path names, as device and inode (one file whatever the path: a link, `./`); none if absent. */
export function identityOf(path: string): string | undefined {
  const stats = statSync(path, { bigint: true, throwIfNoEntry: false })
  return stats === undefined ? undefined : `${stats.dev}:${stats.ino}`
}

/**
 * Device and inode of the database, its `-wal` and its `-shm` as opened, so a write can check the paths
 * still name them: a file replaced under the server takes writes no restart finds, and a new `-shm` lets
 * another process overwrite our commits (docs/decisions.md, "The files must stay the ones opened").
 */
export class SqliteFileIdentity {
  readonly #paths: Record<WatchedFile, string>
  readonly #opened: Record<WatchedFile, string | undefined>

  constructor(path: string) {
    this.#paths = { database: path, wal: `${path}-wal`, shm: `${path}-shm` }
    const paths = this.#paths
    this.#opened = {
      database: identityOf(paths.database),
      wal: identityOf(paths.wal),
      shm: identityOf(paths.shm),
    }
  }

  /** The first file whose path no longer names the file opened, if any. */
  changed(): WatchedFile | undefined {
    return WATCHED.find((file) => identityOf(this.#paths[file]) !== this.#opened[file])
  }

  /**
   * Where the opened `file` is now, as this process sees it (Linux /proc): its new path after a move, or
   * for a deleted file the /proc path that still reads it while this process runs.
   */
  openedFileNow(file: WatchedFile): { path: string; deleted: boolean } | undefined {
    try {
      for (const fd of readdirSync('/proc/self/fd')) {
        const link = `/proc/self/fd/${fd}`
        if (identityOf(link) !== this.#opened[file]) continue
        const target = readlinkSync(link)
        const deleted = target.endsWith(' (deleted)')
        return { path: deleted ? `/proc/${process.pid}/fd/${fd}` : target, deleted }
      }
    } catch {}
    return undefined
  }

  /** Whether another file now sits at the path of `file` (someone else opened the database meanwhile). */
  replacedByAnother(file: WatchedFile): boolean {
    const now = identityOf(this.#paths[file])
    return now !== undefined && now !== this.#opened[file]
  }
}
