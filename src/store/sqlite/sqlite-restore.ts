import { constants, existsSync, realpathSync, renameSync, rmSync, statSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { accessRefused, kindAt, thisUser, unlessRoot } from '../../file-kind.ts'
import type { RestoreSummary } from '../shared/backup-role.ts'
import { leaveNothing, verified, writing } from './sqlite-copy-checks.ts'
import {
  assertCanGiveOwner,
  assertRoomToKeep,
  databaseFileAt,
  isDatabaseFile,
  notOpenToThisUser,
  refuseUnsettled,
  replaceKeepingAside,
  restoreStamp,
  settleLeftovers,
  takeOwnership,
} from './sqlite-database-files.ts'
import {
  COMPANION_SUFFIXES,
  copyToNewPrivateFile,
  fsyncPath,
  removeAbandoned,
  removeWithCompanions,
  temporaryBeside,
} from './sqlite-durable-files.ts'
import { refuseOrphanedLog } from './sqlite-open.ts'
import { directorySlip } from './sqlite-path-slips.ts'
import { carryForwardFrom } from './sqlite-restore-carry.ts'
import { endHold, holdForRestore, leaveLogBehind } from './sqlite-restore-hold.ts'

/**
 * Puts the backup `from` in place of the database, held from the start (`holdForRestore`): copied beside it,
 * checked, given what must outlive a restore (`carryForwardFrom`), synced and renamed in, the old log removed
 * first; until the rename a failure changes nothing, and the one replaced is kept beside it.
 */
export function restoreDatabase(from: string, named: string): RestoreSummary {
  if (!existsSync(from)) throw new Error(`there is no file at ${resolve(from)}`)
  // What a link names is read: a FIFO's read would wait for a writer for ever, the database held meanwhile.
  const kind = kindAt(from)
  if (kind !== undefined) throw new Error(`${from} is ${kind}: name a backup file`)
  // Its copy's EACCES is said of the database's directory, where every other write of a restore goes.
  if (accessRefused(from, constants.R_OK) !== undefined) {
    throw new Error(
      `${from} cannot be read by ${thisUser()}: restore ${unlessRoot('as root, or ')}as its owner`,
    )
  }
  if (databaseFileAt(named) === 'unreachable') throw notOpenToThisUser(named)
  // A file or a link to nothing where its directory should be, which no mkdir mends.
  const slip = directorySlip(named)
  if (slip !== undefined) throw new Error(slip)
  if (!existsSync(dirname(named))) {
    // Not made here: run from the wrong directory, a restore would go where no service reads.
    const directory = resolve(dirname(named))
    throw new Error(
      `${directory} does not exist (DATABASE_URL): for a first restore, create it (mkdir -m 700 ${directory}); ` +
        'else run the command where the service runs, or set DATABASE_URL',
    )
  }
  if (existsSync(named) && isDatabaseFile(named, from)) {
    throw new Error(`${from} is the database being restored (or one of its files): name a backup`)
  }
  refuseUnsettled(from)
  // Through a link, the file replaced is its target, whose companions SQLite keeps beside it.
  const path = existsSync(named) ? realpathSync(named) : named
  refuseOrphanedLog(resolve(path), 'restore in its place')
  if (existsSync(path)) assertRoomToKeep(path)
  // First: a killed restore's copy may hold the room the checkpoint below needs.
  removeAbandoned(path, 'restore')
  removeAbandoned(path, 'hold')
  const what = 'the restored database'
  assertCanGiveOwner(path)
  // Every write of the restore goes beside the database: a directory closed to this user is said so.
  const besideIt = <T>(step: () => T) => writing(path, what, step, 'restore as root')
  // First, before the copy takes the room the checkpoint may need; held past the rename.
  const hold = besideIt(() => holdForRestore(path))
  const held = hold.replacing ? hold.db : undefined
  let renamed = false
  const temporary = temporaryBeside(path, 'restore')
  try {
    besideIt(() => settleLeftovers(path))
    removeWithCompanions(temporary)
    // A new file only: one planted under its name makes the copy fail rather than be written through.
    besideIt(() => copyToNewPrivateFile(from, temporary))
    takeOwnership(path, temporary)
    const pets = verified(temporary, from)
    // A failure to write the copy (a full volume) stops the restore; one to read the old database does not.
    const carried = held && besideIt(() => carryForwardFrom(held, temporary))
    const stamp = restoreStamp()
    let keptAt: { path: string } | { notKept: string } | undefined
    besideIt(() => {
      fsyncPath(temporary)
      if (held) leaveLogBehind(path, hold)
      // The log was emptied: nothing of the old database is applied to the restored one.
      for (const suffix of COMPANION_SUFFIXES) rmSync(`${path}${suffix}`, { force: true })
      keptAt = held && replaceKeepingAside(path, temporary, stamp)
      if (!held) renameSync(temporary, path)
      renamed = true
    })
    endHold(path, hold, renamed)
    try {
      fsyncPath(dirname(path))
    } catch (error) {
      throw new Error(
        `${path} is restored, but its directory could not be synced (${(error as Error).message}): a crash before the next sync could bring the old database back`,
      )
    }
    const replaced = carried && keptAt && { ...carried, keptAt }
    return { pets, bytes: statSync(path).size, ...(replaced ? { replaced } : {}) }
  } finally {
    endHold(path, hold, renamed)
    leaveNothing(temporary)
  }
}
