import { type Command, parseCommandArgs, UsageError } from './command.ts'
import { backupRole } from './open-store.ts'
import { startUp } from './start-up.ts'

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
refused before anything is done. FILE itself is left as it is. On PostgreSQL, use pg_restore (README,
"Backups and restores").`,
  async run(args, { stdout }) {
    const { values } = parseCommandArgs(args, { from: { type: 'string' } })
    if (values.from === undefined) throw new UsageError('missing --from FILE')
    const { config } = startUp()
    const { path, role } = await backupRole(config.database)
    const { pets } = await role.restoreDatabase(values.from, path)
    stdout.write(`restored ${pets} pets from ${values.from} into ${path}\n`)
    return 0
  },
}
