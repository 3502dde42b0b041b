import {
  closeSync,
  constants,
  fchmodSync,
  fchownSync,
  fstatSync,
  linkSync,
  openSync,
  readdirSync,
  readSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
} from 'node:fs'
import { basename, dirname, join, resolve } from 'node:path'
import { runAsServiceUser, thisUser } from '../../file-kind.ts'
import { COMPANION_SUFFIXES, statOrNothing } from './sqlite-durable-files.ts'

// The database's files as a backup and a restore handle them: which files are its, whether a file to
// restore is whole alone, who the restored file must belong to, and how a restore puts it in place keeping
// the one it replaces (sqlite-restore.ts).

// A second name for a file refused: the volume has no hard links (vfat, some network mounts).
const NO_LINKS = new Set(['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'EXDEV', 'EMLINK'])

/** Whether `to` names the database at `path` or a file beside it that is part of it, by path or identity. */
export function isDatabaseFile(path: string, to: string): boolean {
  // SQLite keeps its companion files beside the database's real file, a link's target included.
  const real = realpathSync(path)
  const files = [real, ...COMPANION_SUFFIXES.map((suffix) => `${real}${suffix}`)]
  const target = statOrNothing(to)
  const same = (file: string) => {
    const stats = statOrNothing(file)
    return target !== undefined && stats?.dev === target.dev && stats.ino === target.ino
  }
  // Its directory resolved (links, `..`): a path not yet there cannot be compared by identity.
  const resolved = (file: string) => {
    try {
      return join(realpathSync(dirname(file)), basename(file))
    } catch {
      return resolve(file)
    }
  }
  return files.some(same) || files.includes(resolved(to))
}

/**
 * Whether the database file at `path` is there: `unreachable` when this user may not look (a directory
 * closed to it, the service's own), which a command must not take for a missing database.
 */
export function databaseFileAt(path: string): 'present' | 'absent' | 'unreachable' {
  try {
    return statSync(path, { throwIfNoEntry: false }) === undefined ? 'absent' : 'present'
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    return code === 'EACCES' || code === 'EPERM' ? 'unreachable' : 'absent'
  }
}

/** The refusal of a command run by a user the database's directory is closed to (without sudo, say). */
export function notOpenToThisUser(path: string): Error {
  return new Error(`${resolve(dirname(path))} is not open to ${thisUser()}: ${runAsServiceUser()}`)
}

// What the kept database's name adds to its own: `.replacing-` and a time (`restoreStamp`).
const KEPT_NAME_TAIL_BYTES = '.replacing-'.length + '2026-12-06T05-06-55-427Z'.length
// A file name's limit on Linux file systems (NAME_MAX).
const NAME_MAX = 255

/** The time a restore's kept database is named after, as a file name can hold it. */
export function restoreStamp(): string {
  return new Date().toISOString().replace(/[:.]/g, '-')
}

/** Refuses, before anything is done, a database whose own name leaves no room to keep it under a second. */
export function assertRoomToKeep(path: string): void {
  const bytes = Buffer.byteLength(basename(path))
  if (bytes + KEPT_NAME_TAIL_BYTES <= NAME_MAX) return
  throw new Error(
    `${basename(path)} is ${bytes} bytes long: the database it replaces is kept beside it under its name and .replacing-<time>, then .replaced-<time>, which would pass the ${NAME_MAX} bytes a file name may hold; give the database a name of at most ${NAME_MAX - KEPT_NAME_TAIL_BYTES} bytes`,
  )
}

/**
 * Renames `copy` over the database at `path`, keeping the one replaced under a second name: a hard link,
 * `<db>.replacing-<stamp>` until the copy is in, then `.replaced-<stamp>` (`settleLeftovers` sorts out a
 * crash between) (docs/decisions.md, "A restore undoes no revocation and reuses no id").
 */
export function replaceKeepingAside(
  path: string,
  copy: string,
  stamp: string,
): { path: string } | { notKept: string } {
  const pending = `${path}.replacing-${stamp}`
  try {
    linkSync(path, pending)
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? ''
    if (!NO_LINKS.has(code)) throw error
    renameSync(copy, path)
    return { notKept: `the volume takes no second name for a file (${code})` }
  }
  try {
    renameSync(copy, path)
  } catch (error) {
    rmSync(pending, { force: true })
    throw error
  }
  const kept = `${path}.replaced-${stamp}`
  renameSync(pending, kept)
  return { path: kept }
}

/**
 * What a restore cut short by a crash left beside the database at `path`: a `.replacing-` name that is
 * the database's own file (the crash came before the rename) is removed, as writes through it would
 * damage the database; one that is another file (after it) is the replaced database, given its name.
 */
export function settleLeftovers(path: string): void {
  const live = statOrNothing(path)
  const prefix = `${basename(path)}.replacing-`
  for (const name of readdirSync(dirname(path))) {
    if (!name.startsWith(prefix)) continue
    const leftover = join(dirname(path), name)
    const stats = statOrNothing(leftover)
    if (live !== undefined && stats?.dev === live.dev && stats.ino === live.ino) rmSync(leftover)
    else renameSync(leftover, `${path}.replaced-${name.slice(prefix.length)}`)
  }
}

/**
 * Who the restored file must belong to and its mode: the database's, or on a first restore its
 * directory's owner and 0600.
 */
function ownerOf(path: string): { uid: number; gid: number; of: string; mode: number } {
  const database = statSync(path, { throwIfNoEntry: false })
  const owner = database ?? statSync(dirname(path))
  const mode = database ? database.mode & 0o777 : 0o600
  return { uid: owner.uid, gid: owner.gid, of: database ? path : dirname(path), mode }
}

/** Refuses, before anything is done, a user that could not give the restored file its owner. */
export function assertCanGiveOwner(path: string): void {
  const euid = process.geteuid?.()
  if (euid === undefined || euid === 0) return
  const { uid, gid, of } = ownerOf(path)
  const ownGroup = gid === process.getegid?.() || (process.getgroups?.() ?? []).includes(gid)
  if (uid !== euid || !ownGroup) throw new Error(ownerNotGivable(uid, gid, of))
}

// Said where this user could not give a restored file its owner (not a refusal to read or write, file-kind.ts).
function ownerNotGivable(uid: number, gid: number, of: string): string {
  return `${of} belongs to ${uid}:${gid}, which this user cannot give the restored file: restore as that user or as root`
}

/**
 * Gives the fresh `copy` the owner and mode of the database at `path` (a first restore: its directory's
 * owner, 0600), through a descriptor that follows no link, before the copy is read (docs/decisions.md,
 * "A restore keeps the database's owner and mode").
 */
export function takeOwnership(path: string, copy: string): void {
  const { uid, gid, of, mode } = ownerOf(path)
  const fd = openSync(copy, constants.O_RDWR | constants.O_NOFOLLOW)
  try {
    if (!fstatSync(fd).isFile()) throw new Error(`${copy} is not the file this restore wrote`)
    fchmodSync(fd, mode & 0o700)
    try {
      fchownSync(fd, uid, gid)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EPERM') throw error
      throw new Error(ownerNotGivable(uid, gid, of))
    }
    fchmodSync(fd, mode)
  } finally {
    closeSync(fd)
  }
}

/**
 * Refuses a file to restore that is not whole alone: one with a `-wal` that may hold commits (a process
 * wrote it and did not close) or a hot journal beside it, looked for beside a link's target; a backup of it
 * is whole (docs/decisions.md, "A restore takes only a file that is whole alone").
 */
export function refuseUnsettled(from: string): void {
  const real = realpathSync(from)
  if ((statOrNothing(`${real}-wal`)?.size ?? 0) > 0) {
    refuse(from, `a write-ahead log beside it that may hold writes (${real}-wal)`, 'would lose')
  }
  if (hotJournal(`${real}-journal`)) {
    refuse(from, `an unfinished transaction's journal beside it (${real}-journal)`, 'would take half done')
  }
}

function refuse(from: string, what: string, loss: string): never {
  throw new Error(
    `${from} has ${what}, which a copy of the file alone ${loss}: make a backup of it first (DATABASE_URL=sqlite:${from} petstore backup --to FILE), then restore that`,
  )
}

// The first bytes of a rollback journal that holds a transaction (SQLite's file format, "journal header").
const JOURNAL_MAGIC = Buffer.from([0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7])

function hotJournal(journal: string): boolean {
  if ((statOrNothing(journal)?.size ?? 0) < JOURNAL_MAGIC.length) return false
  const fd = openSync(journal, 'r')
  try {
    const head = Buffer.alloc(JOURNAL_MAGIC.length)
    readSync(fd, head, 0, head.length, 0)
    return head.equals(JOURNAL_MAGIC)
  } finally {
    closeSync(fd)
  }
}
