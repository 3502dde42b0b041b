import { type ParseArgsConfig, parseArgs } from 'node:util'
import { SETTING_NAMES } from '../config-schema.ts'
import { surroundingSpaceRefusal } from '../setting-forms.ts'
import { UsageError } from './command.ts'

/** `parseArgs`, strict, with its errors turned into UsageError (`--help` is handled before commands run). */
export function parseCommandArgs<T extends NonNullable<ParseArgsConfig['options']>>(
  args: string[],
  options: T,
  allowPositionals = false,
) {
  refuseOptionsNpmTook(Object.keys(options), args)
  const parsed = (() => {
    try {
      return parseArgs({ args, options, allowPositionals, strict: true, tokens: true })
    } catch (error) {
      throw new UsageError(usageOf(error as Error, args))
    }
  })()
  // parseArgs keeps the last of a repeated value: `--to a --to b` would write b alone, silently.
  const given = new Map<string, string>()
  for (const token of parsed.tokens) {
    if (token.kind !== 'option' || token.value === undefined) continue
    const first = given.get(token.name)
    if (first !== undefined) {
      throw new UsageError(
        `${token.rawName} is given twice (${JSON.stringify(first)}, then ${JSON.stringify(token.value)}): give it once`,
      )
    }
    given.set(token.name, token.value)
  }
  const { values, positionals } = parsed
  return { values, positionals }
}

/**
 * `npm run petstore keys list --json` hands `--json` to npm, not to the command: npm sets it in its own
 * environment (`npm_config_json`), and the command would run without it, or take its value for another.
 */
function refuseOptionsNpmTook(names: string[], args: readonly string[]): void {
  if (process.env.npm_lifecycle_event !== 'petstore') return
  const took = names.filter(
    (name) =>
      process.env[`npm_config_${name.replaceAll('-', '_')}`] !== undefined &&
      !args.some((arg) => arg === `--${name}` || arg.startsWith(`--${name}=`)),
  )
  if (took.length === 0) return
  const options = took.map((name) => `--${name}`).join(', ')
  throw new UsageError(
    `npm took ${options} as its own option${took.length > 1 ? 's' : ''}: npm run passes on only what follows "--" (npm run petstore -- <command> <options>)`,
  )
}

/**
 * parseArgs's message, first line: the rest repeats it. An option followed by what starts with "-" is
 * "ambiguous": said here with what followed it, a value forgotten or one that needs `--count=-5`.
 */
function usageOf(error: Error, args: readonly string[]): string {
  const unknown = /^Unknown option '(--?[^'=]+)/.exec(error.message)?.[1]
  if (unknown !== undefined) {
    // `serve --port 8081`: the settings are the environment's, named in capitals.
    const setting = unknown.replace(/^-+/, '').replaceAll('-', '_').toUpperCase()
    const hint = SETTING_NAMES.has(setting)
      ? `: ${setting} is a setting, given in the environment or in .env`
      : ''
    return `unknown option ${unknown}${hint}`
  }
  const option = /^Option '(--[^']+)' argument is ambiguous/.exec(error.message)?.[1]
  const at = args.findIndex((arg, index) => arg === option && args[index + 1]?.startsWith('-'))
  const next = args[at + 1]
  if (option === undefined || at === -1 || next === undefined)
    return error.message.split('\n')[0] ?? 'invalid arguments'
  return `${option} needs a value, and ${JSON.stringify(next)} after it reads as an option (to give a value that starts with "-", write ${option}=${next})`
}

/**
 * `--name`'s value, refused when empty (`--to "$UNSET"`): as a path it names no file, and a backup took
 * the whole database before its rename into "" failed. White space around it (a quoting slip) would name
 * another file, as around DATABASE_URL.
 */
export function nonEmptyOption(name: string, value: string, what: string): string {
  if (value === '') throw new UsageError(`--${name} needs ${what} (got "")`)
  const spaced = surroundingSpaceRefusal(value)
  if (spaced !== undefined) throw new UsageError(`--${name} ${spaced}`)
  return value
}

/** A strictly written positive integer option (`--count 10`), within bounds. */
export function integerOption(name: string, raw: string | undefined, fallback: number, max: number): number {
  if (raw === undefined) return fallback
  if (!/^[1-9][0-9]*$/.test(raw) || Number(raw) > max) {
    throw new UsageError(`--${name} must be an integer from 1 to ${max} (got "${raw}")`)
  }
  return Number(raw)
}
