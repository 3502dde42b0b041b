import type { RestoreSummary } from '../store/shared/backup-role.ts'
import { type Command, counted, UsageError } from './command.ts'
import { nonEmptyOption, parseCommandArgs } from './command-args.ts'
import { backupRole } from './open-store.ts'
import { startUp } from './start-up.ts'

/** What the line adds after the restore: where the replaced database is, and what was kept of it. */
function afterRestore({ replaced }: RestoreSummary): string {
  if (replaced === undefined) return ''
  const { replacedPets, keptAt, revocations, idsKept, keysNotInBackup: missing, unreadable } = replaced
  const pets = replacedPets === undefined ? '' : ` (${counted(replacedPets, 'pet')})`
  const kept =
    'path' in keptAt
      ? `; the database it replaced${pets} is kept at ${keptAt.path}: delete it once this one is checked`
      : `; the database it replaced${pets} could not be kept: ${keptAt.notKept}`
  const lost = [
    ...(revocations === undefined
      ? ['revocations made since the backup may be undone (check keys list)']
      : []),
    ...(idsKept ? [] : ['pet ids given out since the backup may be given again']),
  ]
  const unread =
    unreadable === undefined ? '' : `; it could not all be read (${unreadable}): ${lost.join(', and ')}`
  const revoked =
    revocations === undefined || revocations === 0
      ? ''
      : `; ${counted(revocations, 'revocation')} made since the backup kept`
  const keys =
    missing === undefined || missing === 0
      ? ''
      : `; ${counted(missing, 'key')} made since the backup ${missing === 1 ? 'is' : 'are'} not in it`
  return `${kept}${unread}${revoked}${keys}`
}

export const restoreCommand: Command = {
  name: 'restore',
  summary: 'Replace the SQLite database with a backup (servers stopped)',
  help: `Usage: petstore restore --from FILE

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
since is given again). On PostgreSQL, use pg_restore (README, "Backups and restores").`,
  async run(args, { stdout }) {
    const { values } = parseCommandArgs(args, { from: { type: 'string' } })
    if (values.from === undefined) throw new UsageError('missing --from FILE')
    nonEmptyOption('from', values.from, 'a FILE')
    const { config } = startUp()
    const { path, role } = await backupRole(config.database)
    const restored = await role.restoreDatabase(values.from, path)
    stdout.write(
      `restored ${counted(restored.pets, 'pet')} from ${values.from} into ${path}${afterRestore(restored)}\n`,
    )
    return 0
  },
}
