import { messageWithCause, StoreUnavailableError } from '../errors.ts'

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

/** A command's module: loaded only when the command runs or shows its help (run-cli.ts's table). */
export interface Command {
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

/** "1 pet", "2 pets": a count and its noun, as a line prints it. */
export function counted(count: number | bigint, noun: string, plural = `${noun}s`): string {
  return `${count} ${count === 1 || count === 1n ? noun : plural}`
}
