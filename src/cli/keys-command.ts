import { fstatSync, statSync } from 'node:fs'
import type { ParseArgsOptionsConfig } from 'node:util'
import { generateApiKey, storedFormOf } from '../auth/api-key.ts'
import { KEY_NAME_PATTERN, KEY_NAME_RULE } from '../schemas/api-key.ts'
import { DuplicateKeyNameError, type Store } from '../store/store.ts'
import { type Command, CommandError, UsageError, written } from './command.ts'
import { parseCommandArgs } from './command-args.ts'
import { openCommandStore } from './open-store.ts'
import { startUp } from './start-up.ts'

const HELP = `Usage:
  petstore keys create --name <name>   Create a key; the key is printed once, on stdout
  petstore keys list [--json]          List keys (names, hints, deprecated-operation calls; never the keys)
  petstore keys revoke <name>          Revoke the active key with this name

Names: 1 to 64 characters, letters, digits, ".", "_" and "-", starting with a letter or digit.
Only a SHA-256 hash of each key is stored. A revoked key is refused by a running server within
API_KEY_CACHE_TTL_MS (5 seconds by default).`

// Each action accepts only its own options: `keys list --name x` is a mistake worth telling.
const ACTION_OPTIONS: Record<string, ParseArgsOptionsConfig> = {
  create: { name: { type: 'string' } },
  list: { json: { type: 'boolean' } },
  revoke: { name: { type: 'string' } },
}

// A missing name is answered with the usage of that action, as the help gives it.
const USAGE: Record<string, string> = {
  create: 'petstore keys create --name <name>',
  revoke: 'petstore keys revoke <name>',
}

function checkName(action: string, name: string | undefined): string {
  if (name === undefined) throw new UsageError(`${action} needs the key's name: ${USAGE[action]}`)
  if (!KEY_NAME_PATTERN.test(name))
    throw new UsageError(`invalid key name ${JSON.stringify(name)}: ${KEY_NAME_RULE}`)
  return name
}

/**
 * Whether `stdout` is the null device: a key written there is shown nowhere, and the write succeeds, so
 * nothing else would tell. A closed standard output is one too: Node opens it on /dev/null.
 */
function isNullDevice(stdout: object): boolean {
  const fd = (stdout as { fd?: unknown }).fd
  if (typeof fd !== 'number') return false
  try {
    const stats = fstatSync(fd)
    return stats.isCharacterDevice() && stats.rdev === statSync('/dev/null').rdev
  } catch {
    return false
  }
}

/**
 * A key its output did not take (a full disk, a reader gone) is shown nowhere: revoked at once, so no
 * active key is one nobody holds, and its name is free for the command run again.
 */
async function revokeUnshown(
  store: Pick<Store, 'revokeApiKey'>,
  name: string,
  failure: Error,
): Promise<never> {
  const code = (failure as NodeJS.ErrnoException).code ?? failure.message
  const why = `standard output did not take the key (${code})`
  const revoked = await store.revokeApiKey(name).then(
    () => undefined,
    (error: unknown) => (error instanceof Error ? error.message : String(error)),
  )
  if (revoked !== undefined) {
    throw new CommandError(
      `${why}, and it could not be revoked (${revoked}): run petstore keys revoke ${name}`,
    )
  }
  throw new CommandError(`${why}: it was revoked at once, and "${name}" is free; run the command again`)
}

export const keysCommand: Command = {
  help: HELP,
  async run(args, { stdout, stderr }) {
    const [action, ...rest] = args
    if (action === undefined) throw new UsageError('missing action: create, list or revoke')
    const options = ACTION_OPTIONS[action]
    if (options === undefined) throw new UsageError(`unknown action "${action}"`)
    const { values, positionals } = parseCommandArgs(rest, options, action === 'revoke')
    if (positionals.length > 1) throw new UsageError('revoke takes one name')
    if (positionals[0] !== undefined && values.name !== undefined) {
      throw new UsageError(
        `revoke takes the name once, as "${USAGE.revoke}" (got ${JSON.stringify(positionals[0])} and --name ${JSON.stringify(values.name)})`,
      )
    }
    const name =
      action === 'list' ? undefined : checkName(action, (values.name as string | undefined) ?? positionals[0])

    if (action === 'create' && isNullDevice(stdout)) {
      throw new CommandError(
        'standard output is /dev/null (or closed): the key would be shown nowhere; run it where its output is kept (a terminal, a file, a pipe)',
      )
    }
    const { config, log } = startUp(stderr)
    const store = await openCommandStore(config.database, log, {
      name: 'keys',
      creates: action === 'create',
      stderr,
    })
    try {
      if (action === 'create') {
        const key = generateApiKey()
        try {
          await store.createApiKey(storedFormOf(name as string, key))
        } catch (error) {
          if (error instanceof DuplicateKeyNameError) throw new CommandError(error.message)
          throw error
        }
        const failed = await written(stdout, `${key}\n`)
        if (failed) await revokeUnshown(store, name as string, failed)
        stderr.write(`Created API key "${name}". This is the only time it is shown: store it now.\n`)
        return 0
      }
      if (action === 'revoke') {
        if (!(await store.revokeApiKey(name as string)))
          throw new CommandError(`no active API key is named "${name}"`)
        stderr.write(`Revoked API key "${name}".\n`)
        return 0
      }
      const keys = await store.listApiKeys()
      if (values.json) {
        stdout.write(`${JSON.stringify(keys, (_k, v) => (typeof v === 'bigint' ? v.toString() : v), 2)}\n`)
        return 0
      }
      // The last two columns tell who still calls deprecated operations (getPet), to plan their removal.
      const rows = keys.map((key) => [
        key.name,
        key.hint,
        key.createdAt,
        key.revokedAt ?? 'active',
        String(key.deprecatedCalls),
        key.lastDeprecatedCallAt ?? '-',
      ])
      const table = [
        ['NAME', 'KEY', 'CREATED', 'REVOKED', 'DEPRECATED CALLS', 'LAST DEPRECATED CALL'],
        ...rows,
      ]
      const widths =
        table[0]?.map((_, column) => Math.max(...table.map((row) => (row[column] ?? '').length))) ?? []
      for (const row of table)
        stdout.write(
          `${row
            .map((cell, i) => cell.padEnd(widths[i] ?? 0))
            .join('  ')
            .trimEnd()}\n`,
        )
      return 0
    } finally {
      await store.close()
    }
  },
}
