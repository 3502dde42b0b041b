import type { Command } from './command.ts'
import { parseCommandArgs } from './command-args.ts'
import { missingDatabaseFile, openStore, refuseMemoryStore, sayCreated, sayingWaits } from './open-store.ts'
import { startUp } from './start-up.ts'

export const migrateCommand: Command = {
  help: `Usage: petstore migrate

Applies every migration the database does not have yet, in order, and prints what was done.
"serve" does the same at start, so running this first is optional (useful in a deploy pipeline).`,
  async run(args, { stdout, stderr }) {
    parseCommandArgs(args, {})
    const { config, log } = startUp(stderr)
    // Migrated in memory, a store is gone at the exit: "applied" would say what no database holds.
    refuseMemoryStore(config.database, 'migrate')
    // Made where none is (a first deploy's pipeline), and said: from the wrong directory, it goes unseen.
    const missing = missingDatabaseFile(config.database)
    const store = await openStore(config.database, log)
    // Said once the file is there, whether the migration then succeeds or not.
    if (missing !== undefined) sayCreated('migrate', missing, stderr)
    try {
      const { applied, current, latest, floorsColumnAdded } = await store.migrate(sayingWaits(log))
      // A pipeline reading this line is told of every change, the bookkeeping's own included.
      const bookkeeping = floorsColumnAdded
        ? '; schema_migrations gained its compatible_from column (which releases each version works with)'
        : ''
      const done =
        applied.length > 0
          ? `applied migration${applied.length > 1 ? 's' : ''} ${applied.join(', ')}; schema version ${current}`
          : current > latest
            ? `database schema version ${current} is newer than this release's (${latest}), and compatible with it: nothing to apply`
            : floorsColumnAdded
              ? `no migration to apply (schema version ${current})`
              : `database is up to date (schema version ${current})`
      stdout.write(`${done}${bookkeeping}\n`)
      return 0
    } finally {
      await store.close()
    }
  },
}
