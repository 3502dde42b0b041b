import { resolve } from 'node:path'
import { type Command, counted, UsageError } from './command.ts'
import { nonEmptyOption, parseCommandArgs } from './command-args.ts'
import { backupRole } from './open-store.ts'
import { startUp } from './start-up.ts'
import { exitStopped, onStopSignal } from './stop-signals.ts'

export const backupCommand: Command = {
  help: `Usage: petstore backup --to FILE [--force]

Copies the database of DATABASE_URL (SQLite) to FILE while servers keep serving and writing it: one
consistent snapshot (every create acknowledged before the command started is in it), checked (integrity,
Pet Store schema), synced, then renamed into place, so FILE is never half-written. FILE is one
self-contained SQLite file. An existing FILE is replaced only with --force, and only a regular file:
a symbolic link, a device, a FIFO or a socket is refused. Stopped by a signal (Ctrl-C, SIGTERM), it says
so, removes its unfinished copy and leaves FILE as it was (a journal SQLite's copying thread makes at
that very moment may stay, hidden beside FILE: the next backup there removes it).
On PostgreSQL, use pg_dump and pg_restore (README, "Backups and restores").`,
  async run(args, { stdout, stderr }) {
    const { values } = parseCommandArgs(args, { to: { type: 'string' }, force: { type: 'boolean' } })
    if (values.to === undefined) throw new UsageError('missing --to FILE')
    nonEmptyOption('to', values.to, 'a FILE')
    const { config } = startUp()
    const to = values.to
    // The copy under way is removed as the process exits (backupDatabase); FILE is only ever renamed over.
    const release = onStopSignal((signal) =>
      exitStopped(stderr, 'backup', signal, `before the end; ${to} is as it was (not written)`),
    )
    try {
      const { path, role } = await backupRole(config.database)
      const { pets, bytes } = await role.backupDatabase(path, to, { force: values.force ?? false })
      // Named whole: `npm run` runs the command in the repository's root, not where it was typed.
      stdout.write(`backed up ${counted(pets, 'pet')} to ${resolve(to)} (${bytes} bytes)\n`)
      return 0
    } finally {
      release()
    }
  },
}
