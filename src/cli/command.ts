import { type ParseArgsConfig, parseArgs } from 'node:util'

export interface Output {
  isTTY?: boolean
  write(text: string): unknown
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

/** `parseArgs`, strict, with its errors turned into UsageError (`--help` is handled before commands run). */
export function parseCommandArgs<T extends NonNullable<ParseArgsConfig['options']>>(
  args: string[],
  options: T,
  allowPositionals = false,
) {
  try {
    return parseArgs({
      args,
      options,
      allowPositionals,
      strict: true,
    })
  } catch (error) {
    throw new UsageError((error as Error).message.split('\n')[0] ?? 'invalid arguments')
  }
}

/** A strictly written positive integer option (`--count 10`), within bounds. */
export function integerOption(name: string, raw: string | undefined, fallback: number, max: number): number {
  if (raw === undefined) return fallback
  if (!/^[1-9][0-9]*$/.test(raw) || Number(raw) > max) {
    throw new UsageError(`--${name} must be an integer from 1 to ${max} (got "${raw}")`)
  }
  return Number(raw)
}
