import { resolve } from 'node:path'
import type { DatabaseSettings } from '../config.ts'
import { storeLocationOf } from '../setting-forms.ts'
import type { CarriedForward, RestoreSummary } from '../store/shared/backup-role.ts'
import { type Command, counted, type Output, UsageError } from './command.ts'
import { nonEmptyOption, parseCommandArgs } from './command-args.ts'
import { backupRole } from './open-store.ts'
import { startUp } from './start-up.ts'

// The keys to make again, by name, in one line: at most this many named, the rest counted.
const NAMED_KEYS = 10
function namesOf(names: string[]): string {
  if (names.length <= NAMED_KEYS) return names.join(', ')
  const more = `${names.length - NAMED_KEYS} more (keys list on the database it replaced names them)`
  return `${names.slice(0, NAMED_KEYS).join(', ')} and ${more}`
}

/** What a restore kept of the database it replaced, part by part, as its line says it. */
function carriedLine(carried: CarriedForward): string {
  const { sessionsEnded = 0, revocations, petIdsGivenUpTo, keysNotInBackup: missing, unreadable } = carried
  const ended =
    sessionsEnded === 0
      ? ''
      : `; ended ${counted(sessionsEnded, 'session')} of the service on it, ` +
        'which may have begun before it was read-only'
  const lost = [
    ...(revocations === undefined
      ? ['revocations made since the backup may be undone (check keys list)']
      : []),
    ...(petIdsGivenUpTo === undefined ? ['pet ids given out since the backup may be given again'] : []),
  ]
  const unread =
    unreadable === undefined ? '' : `; it could not all be read (${unreadable}): ${lost.join(', and ')}`
  const revoked =
    revocations === undefined || revocations === 0
      ? ''
      : `; ${counted(revocations, 'revocation')} made since the backup kept`
  // Said even when nothing else is: that no id a client holds is given again is what the step is for.
  const ids =
    petIdsGivenUpTo === undefined || petIdsGivenUpTo === 0n
      ? ''
      : `; pet ids it gave out (up to ${petIdsGivenUpTo}) not given again`
  const keys =
    missing === undefined || missing.length === 0
      ? ''
      : `; ${counted(missing.length, 'key')} made since the backup ${missing.length === 1 ? 'is' : 'are'} ` +
        `not in it: ${namesOf(missing)}`
  return `${ended}${unread}${revoked}${ids}${keys}`
}

/** What the line adds after the restore: where the replaced database is, and what was kept of it. */
function afterRestore({ replaced }: RestoreSummary): string {
  if (replaced === undefined) return ''
  const { replacedPets, keptAt } = replaced
  const pets = replacedPets === undefined ? '' : ` (${counted(replacedPets, 'pet')})`
  const kept =
    'path' in keptAt
      ? `; the database it replaced${pets} is kept at ${resolve(keptAt.path)}: ` +
        'delete it once this one is checked'
      : `; the database it replaced${pets} could not be kept: ${keptAt.notKept}`
  return `${kept}${carriedLine(replaced)}`
}

/**
 * `--replacing URL` on PostgreSQL, once pg_restore has made the database of DATABASE_URL: what the one it
 * replaces must pass on is kept in it, and the line says what.
 */
async function carryOnPostgres(
  replacing: string,
  database: DatabaseSettings,
  { stdout, stderr }: { stdout: Output; stderr: Output },
): Promise<number> {
  const location = storeLocationOf(replacing)
  if ('refusal' in location) throw new UsageError(`--replacing ${location.refusal}`)
  if (location.engine !== 'postgres')
    throw new UsageError(
      '--replacing names the PostgreSQL database the restored one replaces: a postgres:// URL',
    )
  if (database.engine === 'postgres' && replacing === database.url)
    throw new UsageError(
      '--replacing names DATABASE_URL itself: DATABASE_URL is the new database pg_restore made',
    )
  const { role } = await backupRole(database)
  const carried = await role.carryForward(replacing, database.engine === 'postgres' ? database.url : '')
  const pets = carried.replacedPets === undefined ? '' : ` (${counted(carried.replacedPets, 'pet')})`
  if (carried.unreadable === undefined) {
    stdout.write(
      `kept what the database it replaces${pets} passes on${carriedLine(carried) || ': nothing to keep'}\n`,
    )
    return 0
  }
  // Not all read (a wrong URL, another application's database, a server down): the runbook's script stops.
  stderr.write(
    `could not keep all that the database it replaces${pets} passes on${carriedLine(carried)}; ` +
      "mend --replacing's URL, or bring that database up, then run it again\n",
  )
  return 1
}

export const restoreCommand: Command = {
  help: `Usage: petstore restore --from FILE          (SQLite)
       petstore restore --replacing URL     (PostgreSQL, after pg_restore)

Replaces the database of DATABASE_URL (SQLite) with the backup FILE. The restore is refused while any
process (a server, a worker, a command) has the database open: stop the service, restore, start it.
The database is held until the end and its write-ahead log folded into it; then FILE is copied beside
it and the copy checked (integrity, a Pet Store database at a schema this release runs on). The old
database is replaced in one rename, its emptied log removed; the new file keeps the old one's owner and
mode (its directory's owner and 0600 on a first restore), and a user that cannot give it that owner is
refused before anything is done. FILE itself is left as it is; a FILE with writes in a -wal (or an
unfinished -journal) beside it is refused: back it up first
(DATABASE_URL=sqlite:FILE petstore backup --to COPY), then restore COPY.
FILE is a regular file, or a symbolic link to one: a FIFO, a socket or a device is refused.
The database replaced is kept beside it (petstore.db.replaced-<time>), and the restored one keeps from it
every revocation (a key revoked since the backup stays revoked) and its id sequences (no pet id given out
since is given again).
On PostgreSQL, pg_restore makes the restored database (README, "Backups and restores"); then, before
any instance serves it, --replacing URL (the database it replaces, password in PGPASSWORD) keeps the
same in it: DATABASE_URL names the restored database. Stop the instances on the database it replaces
first (or make it read-only for new sessions): while sessions of the service are connected to it, the
command refuses and changes nothing. When that database cannot all be read (not a Pet Store database,
or down), it says what may be lost and exits 1.`,
  async run(args, { stdout, stderr }) {
    const { values } = parseCommandArgs(args, { from: { type: 'string' }, replacing: { type: 'string' } })
    if ((values.from === undefined) === (values.replacing === undefined))
      throw new UsageError('give --from FILE (SQLite) or --replacing URL (PostgreSQL, after pg_restore)')
    if (values.replacing !== undefined) {
      const { config } = startUp()
      const replacing = nonEmptyOption('replacing', values.replacing, 'a URL')
      return carryOnPostgres(replacing, config.database, { stdout, stderr })
    }
    const from = nonEmptyOption('from', values.from as string, 'a FILE')
    const { config } = startUp()
    const { path, role } = await backupRole(config.database)
    const restored = await role.restoreDatabase(from, path)
    stdout.write(
      `restored ${counted(restored.pets, 'pet')} from ${resolve(from)} into ${resolve(path)}` +
        `${afterRestore(restored)}\n`,
    )
    return 0
  },
}
