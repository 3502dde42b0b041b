import { closeSync, existsSync, openSync, readSync } from 'node:fs'
import { endianness } from 'node:os'

// The -wal: a 32-byte header, then frames of a 24-byte header (its two salts at 8) and a page each.
const LOG_HEADER_BYTES = 32
const FRAME_HEADER_BYTES = 24
const SALTS_AT_IN_FRAME = 8
// The -shm opens with two copies of the index's header, 48 bytes each (SQLite's WalIndexHdr), which
// keeps the log's salts at 32, byte for byte as the log has them.
const INDEX_HEADER_BYTES = 48
const SALTS_AT_IN_INDEX = 32
const LITTLE_ENDIAN = endianness() === 'LE'

/**
 * Whether the `-wal` still holds what the `-shm` says it commits: a log cut short in place keeps its inode,
 * and SQLite would checkpoint the cut pages, read as zeros, over the database. Both read from their files,
 * never through SQLite (docs/decisions.md, "The log must hold what its index says").
 */
export class SqliteLogLength {
  readonly #logPath: string
  readonly #indexPath: string
  // Open until the connection is closed: closing any descriptor of the -shm would drop the locks SQLite
  // holds on it (POSIX locks belong to the process and the file, not to a descriptor).
  #indexFd: number | undefined
  // SQLite locks no byte of the log itself: this one may close at any time.
  #logFd: number | undefined
  readonly #index = Buffer.alloc(INDEX_HEADER_BYTES * 2)
  readonly #frame = Buffer.alloc(FRAME_HEADER_BYTES)

  constructor(path: string) {
    this.#logPath = `${path}-wal`
    this.#indexPath = `${path}-shm`
  }

  /**
   * True when the last frame the index commits is not in the log: cut off (the log shorter), or zeros
   * where it was (cut, then grown again by a later commit), which lack the index's salts. An index being
   * rewritten, or none, is no finding. Two reads, one of each file.
   */
  cutShort(): boolean {
    try {
      return this.#cutShort()
    } catch {
      // A file that cannot be read here is for SQLite's own reads and writes to report.
      return false
    }
  }

  #cutShort(): boolean {
    const index = this.#readIndexHeader()
    if (index === undefined || index.frames === 0) return false
    if (this.#logFd === undefined) {
      // A log deleted is the file identity's finding, not this one's.
      if (!existsSync(this.#logPath)) return false
      this.#logFd = openSync(this.#logPath, 'r')
    }
    // Any cut below the end of the log's committed frames takes the last one with it.
    const lastFrameAt = LOG_HEADER_BYTES + (index.frames - 1) * (index.pageSize + FRAME_HEADER_BYTES)
    const frame = this.#frame
    if (readSync(this.#logFd, frame, 0, FRAME_HEADER_BYTES, lastFrameAt) < FRAME_HEADER_BYTES) return true
    const salts = SALTS_AT_IN_FRAME
    return this.#index.compare(frame, salts, salts + 8, SALTS_AT_IN_INDEX, SALTS_AT_IN_INDEX + 8) !== 0
  }

  /** Closes both descriptors: only once the connection is closed (see `#indexFd`). */
  close(): void {
    if (this.#indexFd !== undefined) closeSync(this.#indexFd)
    if (this.#logFd !== undefined) closeSync(this.#logFd)
    this.#indexFd = undefined
    this.#logFd = undefined
  }

  /** The index's frame count and page size (the machine's byte order), from its header's agreeing copies. */
  #readIndexHeader(): { frames: number; pageSize: number } | undefined {
    if (this.#indexFd === undefined) {
      if (!existsSync(this.#indexPath)) return undefined
      this.#indexFd = openSync(this.#indexPath, 'r')
    }
    const bytes = this.#index
    if (readSync(this.#indexFd, bytes, 0, bytes.length, 0) < bytes.length) return undefined
    // SQLite writes the second copy, then the first: copies that differ are a header being written.
    if (bytes.compare(bytes, 0, INDEX_HEADER_BYTES, INDEX_HEADER_BYTES) !== 0 || bytes[12] !== 1)
      return undefined
    const size = LITTLE_ENDIAN ? bytes.readUInt16LE(14) : bytes.readUInt16BE(14)
    // The page size in 16 bits: 65,536 is written as 1.
    const pageSize = size === 1 ? 65_536 : size
    return { frames: LITTLE_ENDIAN ? bytes.readUInt32LE(16) : bytes.readUInt32BE(16), pageSize }
  }
}
