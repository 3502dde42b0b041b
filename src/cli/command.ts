import { constants } from 'node:os'
import { type ParseArgsConfig, parseArgs } from 'node:util'
import { messageWithCause, StoreUnavailableError } from '../errors.ts'
import { STOP_SIGNALS } from '../server.ts'
import { surroundingSpaceRefusal } from '../setting-forms.ts'

/** The shell's exit code for a process ended by `signal` (143 for SIGTERM), as a stop by it exits. */
export function signalExitCode(signal: NodeJS.Signals): number {
  return 128 + (constants.signals[signal] ?? 0)
}

/**
 * Calls `stop` on the first of the signals a server stops on (SIGHUP too: the terminal went away), once;
 * returns the function that takes the handlers off again, for a command that ended on its own.
 */
export function onStopSignal(stop: (signal: NodeJS.Signals) => void): () => void {
  const release = () => {
    for (const signal of STOP_SIGNALS) process.off(signal, once)
  }
  // Released after `stop`: one that exits keeps every handler while it cleans up, so that a second
  // signal cannot kill it half-way; one that goes on leaves a second signal its default, ending it.
  const once = (signal: NodeJS.Signals) => {
    try {
      stop(signal)
    } finally {
      release()
    }
  }
  for (const signal of STOP_SIGNALS) process.on(signal, once)
  return release
}

/**
 * The exit code of a setting refused (sysexits' EX_CONFIG): apart from 1, which a database down at start
 * also gives, so that a service manager can stop restarting what only an edit mends (the systemd unit).
 */
export const CONFIG_EXIT_CODE = 78

export interface Output {
  isTTY?: boolean
  write(text: string, done?: (error?: Error | null) => void): unknown
}

/** Writes `text`; resolves once the output has taken it, or with the error that stopped it (a full disk). */
export function written(output: Output, text: string): Promise<Error | undefined> {
  return new Promise((resolve) => output.write(text, (error) => resolve(error ?? undefined)))
}

export interface CommandIo {
  stdout: Output
  stderr: Output
}

export interface Command {
  name: string
  summary: string
  /** The whole `--help` text. */
  help: string
  /** Resolves to the exit code; `serve` resolves once listening and keeps the process alive. */
  run(args: string[], io: CommandIo): Promise<number>
}

/** Wrong usage: reported on one line, exit code 2. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'UsageError'
  }
}

/** A runtime failure the user can act on (bad config, name taken…): one line, exit code 1. */
export class CommandError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'CommandError'
  }
}

/** A runtime failure said in one line (after "petstore <command>: "), with what to do if the store says. */
export function failureLine(error: unknown): string {
  if (error instanceof StoreUnavailableError) {
    const remedy = error.remedy === undefined ? '' : `; ${error.remedy}`
    return `${messageWithCause(error)}${remedy}`
  }
  // Anything else (port in use, unreadable database file…) is still one line; the stack helps nobody here.
  return error instanceof Error ? error.message : String(error)
}

/** `parseArgs`, strict, with its errors turned into UsageError (`--help` is handled before commands run). */
export function parseCommandArgs<T extends NonNullable<ParseArgsConfig['options']>>(
  args: string[],
  options: T,
  allowPositionals = false,
) {
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
 * parseArgs's message, first line: the rest repeats it. An option followed by what starts with "-" is
 * "ambiguous": said here with what followed it, a value forgotten or one that needs `--count=-5`.
 */
function usageOf(error: Error, args: readonly string[]): string {
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

/** "1 pet", "2 pets": a count and its noun, as a line prints it. */
export function counted(count: number | bigint, noun: string, plural = `${noun}s`): string {
  return `${count} ${count === 1 || count === 1n ? noun : plural}`
}

/** A strictly written positive integer option (`--count 10`), within bounds. */
export function integerOption(name: string, raw: string | undefined, fallback: number, max: number): number {
  if (raw === undefined) return fallback
  if (!/^[1-9][0-9]*$/.test(raw) || Number(raw) > max) {
    throw new UsageError(`--${name} must be an integer from 1 to ${max} (got "${raw}")`)
  }
  return Number(raw)
}
