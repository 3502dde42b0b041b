import { ConfigError } from '../errors.ts'
import { backupCommand } from './backup-command.ts'
import { CONFIG_EXIT_CODE, type Command, type CommandIo, failureLine, UsageError } from './command.ts'
import { copyCommand } from './copy-command.ts'
import { keysCommand } from './keys-command.ts'
import { migrateCommand } from './migrate-command.ts'
import { openapiCommand } from './openapi-command.ts'
import { releaseVersion } from './release.ts'
import { restoreCommand } from './restore-command.ts'
import { seedCommand } from './seed-command.ts'
import { serveCommand } from './serve-command.ts'

const COMMANDS: Command[] = [
  serveCommand,
  migrateCommand,
  keysCommand,
  seedCommand,
  backupCommand,
  restoreCommand,
  copyCommand,
  openapiCommand,
]

const HELP = `Usage: petstore [command] [options]

Commands:
${COMMANDS.map((command) => `  ${command.name.padEnd(9)} ${command.summary}`).join('\n')}

Run "petstore <command> --help" for a command's options. Without a command, "serve" runs.
"petstore --version" prints the version.`

/** What `--help` or `--version` prints, or the one line refusing what came with it. */
function topLevelAnswer(flag: string, rest: string[]): { stdout: string } | { usage: string } {
  const help = flag !== '--version' && flag !== '-v'
  // "petstore --help seed" is "petstore seed --help", as in git or npm.
  const command = help && rest.length === 1 ? COMMANDS.find(({ name }) => name === rest[0]) : undefined
  if (command !== undefined) return { stdout: command.help }
  const extra = rest.find((arg) => !COMMANDS.some(({ name }) => name === arg)) ?? rest[rest.length - 1]
  if (extra !== undefined) return { usage: `${flag} takes no "${extra}"` }
  return { stdout: help ? HELP : `petstore ${releaseVersion()}` }
}

export async function runCli(argv: string[], io: CommandIo): Promise<number> {
  const [first, ...rest] = argv
  if (first === '--help' || first === '-h' || first === 'help' || first === '--version' || first === '-v') {
    const answer = topLevelAnswer(first, rest)
    if ('stdout' in answer) {
      io.stdout.write(`${answer.stdout}\n`)
      return 0
    }
    io.stderr.write(`petstore: ${answer.usage} (see "petstore --help")\n`)
    return 2
  }
  const implicitServe = first === undefined || first.startsWith('-')
  const command = implicitServe ? serveCommand : COMMANDS.find((candidate) => candidate.name === first)
  const name = command?.name ?? first ?? 'serve'
  const args = implicitServe ? argv : rest
  try {
    if (command === undefined) throw new UsageError(`unknown command "${first}"`)
    if (args.includes('--help') || args.includes('-h')) {
      io.stdout.write(`${command.help}\n`)
      return 0
    }
    return await command.run(args, io)
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr.write(
        `petstore ${name}: ${error.message} (see "petstore ${command ? `${name} ` : ''}--help")\n`,
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
