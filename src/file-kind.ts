import { accessSync, lstatSync, readlinkSync, type Stats, statSync } from 'node:fs'

// What a path names when it is not a regular file, in words: a command that reads or replaces a file
// refuses the others (a FIFO's read waits for a writer; a device renamed over is gone) naming which.
// And what keeps this user from a path (its owner, its mode), said one way by every command.

/** What `stats` (lstat's, or stat's through a link) describe, or undefined for a regular file. */
export function kindOfFile(stats: Stats): string | undefined {
  if (stats.isFile()) return undefined
  if (stats.isSymbolicLink()) return 'a symbolic link'
  if (stats.isDirectory()) return 'a directory'
  if (stats.isFIFO()) return 'a FIFO (named pipe)'
  if (stats.isSocket()) return 'a socket'
  if (stats.isCharacterDevice()) return 'a character device'
  if (stats.isBlockDevice()) return 'a block device'
  return 'not a regular file'
}

/** What `path` names, through a link, when it is not a regular file; undefined too when nothing is there. */
export function kindAt(path: string): string | undefined {
  const stats = statSync(path, { throwIfNoEntry: false })
  return stats && kindOfFile(stats)
}

/** What to say of `path` when it is a symbolic link to nothing, and what to do (undefined too if unseen). */
export function linkToNothing(path: string): string | undefined {
  try {
    if (!lstatSync(path, { throwIfNoEntry: false })?.isSymbolicLink() || !namesNothing(path)) return undefined
    return `${path} is a link to nothing (${readlinkSync(path)}): make what it names, or remove it`
  } catch {
    return undefined
  }
}

// Only a target that is not there: one this user may not reach (EACCES) is there, and not to be removed.
function namesNothing(link: string): boolean {
  try {
    statSync(link)
    return false
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    return code === 'ENOENT' || code === 'ENOTDIR'
  }
}

/** The user a refusal is said of: the one running the command, by its uid (a container's has no name). */
export function thisUser(): string {
  return `this user (uid ${process.geteuid?.() ?? '?'})`
}

/**
 * `advice` for a user other than root, else nothing: root is refused only where its rights end (NFS's
 * root_squash, a capability dropped), so root is not told to run as root, nor to take the path over.
 */
export function unlessRoot(advice: string): string {
  return process.geteuid?.() === 0 ? '' : advice
}

/** What a user kept out of a database or its directory is told to do. */
export function runAsServiceUser(): string {
  return `run the command as the user the service runs as${unlessRoot(', or as root')}`
}

/** A file's permission bits as `ls` and `chmod` write them: `0644`. */
export function modeInOctal(mode: number): string {
  return (mode & 0o777).toString(8).padStart(4, '0')
}

/**
 * Why the owner and mode in `stats` keep this user from `access` to `path`: this user's own file is
 * told to chmod, another user's gets `otherwise` (whom to run as, or whom to give it).
 */
export function ownerRefusal(
  path: string,
  { uid, gid, mode }: Stats,
  access: 'read' | 'write',
  otherwise: string,
): string {
  if (uid !== process.geteuid?.())
    return `${path} belongs to ${uid}:${gid}, and ${thisUser()} cannot ${access} it: ${otherwise}`
  const octal = modeInOctal(mode)
  const [doing, bits] = access === 'read' ? ['reading', 'r'] : ['writing', 'rw']
  return `${path} is this user's, and its mode ${octal} keeps this user from ${doing} it: chmod u+${bits} it`
}

/** The code of the error that keeps this user from `mode` (fs.constants' R_OK, W_OK) on `path`, if any. */
export function accessRefused(path: string, mode: number): string | undefined {
  try {
    accessSync(path, mode)
    return undefined
  } catch (error) {
    return (error as NodeJS.ErrnoException).code ?? 'EIO'
  }
}
