import { ConfigError } from '../errors.ts'
import { CONFIG_EXIT_CODE, type Command, type CommandIo, failureLine, UsageError } from './command.ts'
import { releaseVersion } from './release.ts'

/**
 * Every command, and where its module is: each is loaded only to run or to show its help, so that
 * `--help`, `--version` and the data commands start without the server's framework (docs/decisions.md,
 * "Each command loads its own modules").
 */
interface CommandEntry {
  name: string
  summary: string
  load(): Promise<Command>
}

const COMMANDS: CommandEntry[] = [
  {
    name: 'serve',
    summary: 'Serve the API (the default command)',
    load: async () => (await import('./serve-command.ts')).serveCommand,
  },
  {
    name: 'migrate',
    summary: 'Apply pending database migrations, then exit',
    load: async () => (await import('./migrate-command.ts')).migrateCommand,
  },
  {
    name: 'keys',
    summary: 'Create, list or revoke API keys',
    load: async () => (await import('./keys-command.ts')).keysCommand,
  },
  {
    name: 'seed',
    summary: 'Add demo pets to the store',
    load: async () => (await import('./seed-command.ts')).seedCommand,
  },
  {
    name: 'backup',
    summary: 'Copy the SQLite database to a file while it serves',
    load: async () => (await import('./backup-command.ts')).backupCommand,
  },
  {
    name: 'restore',
    summary: 'Replace the SQLite database with a backup; on PostgreSQL, finish a pg_restore',
    load: async () => (await import('./restore-command.ts')).restoreCommand,
  },
  {
    name: 'copy',
    summary: 'Copy every pet, key and setting from one store to another',
    load: async () => (await import('./copy-command.ts')).copyCommand,
  },
  {
    name: 'openapi',
    summary: 'Print the OpenAPI 3.1 document',
    load: async () => (await import('./openapi-command.ts')).openapiCommand,
  },
]

const HELP = `Usage: petstore [command] [options]

Commands:
${COMMANDS.map((command) => `  ${command.name.padEnd(9)} ${command.summary}`).join('\n')}

Run "petstore <command> --help" for a command's options. Without a command, "serve" runs.
"petstore --version" prints the version.`

/** What `--help` or `--version` prints, or the one line refusing what came with it. */
async function topLevelAnswer(flag: string, rest: string[]): Promise<{ stdout: string } | { usage: string }> {
  const help = flag !== '--version' && flag !== '-v'
  // "petstore --help seed" is "petstore seed --help", as in git or npm.
  const command = help && rest.length === 1 ? COMMANDS.find(({ name }) => name === rest[0]) : undefined
  if (command !== undefined) return { stdout: (await command.load()).help }
  const extra = rest.find((arg) => !COMMANDS.some(({ name }) => name === arg)) ?? rest[rest.length - 1]
  if (extra !== undefined) return { usage: `${flag} takes no "${extra}"` }
  return { stdout: help ? HELP : `petstore ${releaseVersion()}` }
}

export async function runCli(argv: string[], io: CommandIo): Promise<number> {
  const [first, ...rest] = argv
  if (first === '--help' || first === '-h' || first === 'help' || first === '--version' || first === '-v') {
    const answer = await topLevelAnswer(first, rest)
    if ('stdout' in answer) {
      io.stdout.write(`${answer.stdout}\n`)
      return 0
    }
    io.stderr.write(`petstore: ${answer.usage} (see "petstore --help")\n`)
    return 2
  }
  const implicitServe = first === undefined || first.startsWith('-')
  const entry = COMMANDS.find((candidate) => candidate.name === (implicitServe ? 'serve' : first))
  const name = entry?.name ?? first ?? 'serve'
  const args = implicitServe ? argv : rest
  try {
    if (entry === undefined) throw new UsageError(`unknown command "${first}"`)
    const command = await entry.load()
    if (args.includes('--help') || args.includes('-h')) {
      io.stdout.write(`${command.help}\n`)
      return 0
    }
    return await command.run(args, io)
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr.write(
        `petstore ${name}: ${error.message} (see "petstore ${entry ? `${name} ` : ''}--help")\n`,
      )
      return 2
    }
    if (error instanceof ConfigError) {
      io.stderr.write(`petstore: invalid configuration: ${error.message}\n`)
      return CONFIG_EXIT_CODE
    }
    io.stderr.write(`petstore ${name}: ${failureLine(error)}\n`)
    return 1
  }
}
