import { dirname } from 'node:path'
import { kindOfFile, linkToNothing, runAsServiceUser, thisUser } from '../../file-kind.ts'
import { databaseFileAt } from './sqlite-database-files.ts'
import { lstatOrNothing, statOrNothing } from './sqlite-durable-files.ts'

// Why a database path names no file SQLite can open, where SQLite says only "unable to open database
// file": said as backup and restore say it (file-kind.ts), with what to do, naming the path.

/** `path is <kind>: …` when `path` (through a link) is there and is no regular file. */
export function notADatabaseFile(path: string): string | undefined {
  const stats = statOrNothing(path)
  const kind = stats && kindOfFile(stats)
  return kind && `${path} is ${kind}: DATABASE_URL must name a database file`
}

/** What is wrong with `path` itself or with the nearest of its parents there, if anything: one clause. */
export function pathSlip(path: string): string | undefined {
  return notADatabaseFile(path) ?? linkToNothing(path) ?? directorySlip(path)
}

/** `path` there, through a link or a directory this user may not pass (a command run without sudo). */
export function unreachable(path: string): string | undefined {
  if (databaseFileAt(path) !== 'unreachable') return undefined
  return `${path} cannot be reached by ${thisUser()}: ${runAsServiceUser()}`
}

/** What is wrong with the nearest of `path`'s parents there, where a directory should be: one clause. */
export function directorySlip(path: string): string | undefined {
  for (let parent = dirname(path); ; parent = dirname(parent)) {
    // A parent not there (its own parent a file, say) is passed over for the nearest one that is.
    if (lstatOrNothing(parent) !== undefined) return parentSlip(parent)
    if (parent === dirname(parent)) return undefined
  }
}

/** What is wrong with `parent`, where a directory should be: a link to nothing, or no directory. */
function parentSlip(parent: string): string | undefined {
  const dangling = linkToNothing(parent)
  if (dangling !== undefined) return dangling
  const stats = statOrNothing(parent)
  if (stats === undefined || stats.isDirectory()) return undefined
  const kind = kindOfFile(stats) ?? 'a regular file'
  return `${parent} is ${kind}, not a directory: move it away, or correct the path`
}
