import { isatty } from 'node:tty'
import type { FastifyRequest } from 'fastify'
import pino, { type DestinationStream, type Logger } from 'pino'
import { clientAddressOf } from './client-address.ts'
import { maskApiKeys } from './key-masking.ts'
import { type BufferedLogOutput, LOG_OUTPUT } from './log-output.ts'
import { droppedLogLines, type LogStream } from './standard-streams.ts'

/** The `LOG_LEVEL` and `LOG_FORMAT` settings. */
export interface LogSettings {
  level: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent'
  /** `auto` is pretty on a terminal and JSON otherwise. */
  format: 'auto' | 'json' | 'pretty'
}

/**
 * The process logger, made once by the command that runs. Keys never reach its output: `Authorization`
 * is redacted wherever headers are logged, and every line it writes is searched for anything shaped like
 * a key, plain or percent-encoded, just before it is written (a key echoed in an error message), so no
 * field that may one day hold client input can leak one. The access line is built beside it
 * (http/request-line.ts) and masks each field a client can reach instead. JSON lines
 * for machines; with `pretty` (a terminal, by default), human-readable lines through pino-pretty, made
 * from the masked JSON. Lines go to `destination`, or else to descriptor `fd` (a worker's log:
 * cli/supervisor/worker-stdio.ts).
 */
export function createLogger(
  { level }: Pick<LogSettings, 'level'>,
  pretty = false,
  destination?: DestinationStream,
  fd = 1,
): Logger {
  const options = {
    level,
    redact: {
      // A Redis reply's error carries the command it answers: AUTH's holds the password.
      paths: ['req.headers.authorization', 'req.headers.cookie', 'headers.authorization', 'err.command.args'],
      censor: '[redacted]',
    },
    hooks: { streamWrite: maskApiKeys },
    serializers: {
      req: (request: FastifyRequest) => ({
        method: request.method,
        url: maskApiKeys(request.url),
        remoteAddress: clientAddressOf(request),
      }),
    },
    ...(pretty
      ? {
          transport: {
            target: 'pino-pretty',
            options: { translateTime: 'SYS:HH:MM:ss.l', destination: fd, colorize: colorsOn(fd) },
          },
        }
      : {}),
  }
  if (pretty || (destination === undefined && fd === 1)) return pino(options)
  return pino(options, destination ?? pino.destination(fd))
}

/**
 * Whether pretty lines on `fd` are coloured: NO_COLOR, FORCE_COLOR, else a terminal whose TERM is not
 * dumb. pino-pretty's own default (colorette's) looks at descriptor 1, which is not a worker's log.
 */
function colorsOn(fd: number): boolean {
  const { env } = process
  if ('NO_COLOR' in env) return false
  return (
    'FORCE_COLOR' in env || (isatty(fd) && env.TERM !== undefined && env.TERM !== '' && env.TERM !== 'dumb')
  )
}

// What the warn line says for each stream a buffered output writes (log/log-output.ts).
const DROPPED_ON: Record<LogStream, string> = {
  stdout: 'log lines dropped: standard output did not keep up',
  stderr: "workers' output dropped: standard error did not keep up",
}

/**
 * Says, every so often, how many lines were dropped since it last said so, a line for each stream (once
 * stdout takes lines again): the log's, and, in a WORKERS supervisor, the workers' output it relays to
 * stderr, whose drops are said whatever the format of its own log.
 */
export function reportDroppedLogLines(log: Logger, output?: Pick<BufferedLogOutput, 'flush'>): void {
  setInterval(droppedLinesReport(log, output), LOG_OUTPUT.dropReportIntervalMs).unref()
}

/**
 * One report each call: a warn line for each stream that dropped lines since the last one taken. `output`
 * is the log's, when buffered.
 */
export function droppedLinesReport(log: Logger, output?: Pick<BufferedLogOutput, 'flush'>): () => void {
  const reported: Record<LogStream, number> = { stdout: 0, stderr: 0 }
  return () => {
    // Request lines waiting to be made are made (and, stdout full, dropped) first, not inside the warn.
    output?.flush()
    for (const stream of ['stdout', 'stderr'] as const) {
      const dropped = droppedLogLines(stream)
      if (dropped === reported[stream]) continue
      const logDropped = droppedLogLines('stdout')
      log.warn({ droppedLines: dropped - reported[stream] }, DROPPED_ON[stream])
      // Dropped itself (stdout still full): its count is said by the next one that gets through.
      if (droppedLogLines('stdout') === logDropped) reported[stream] = dropped
    }
  }
}

// How long the log is given, at most, to write its last lines before the process exits without them.
const FLUSH_TIMEOUT_MS = 1000

/**
 * Exits with `code` once the log's buffered lines are written, or, if stdout is stuck, so as to be gone
 * within `withinMs`: the wait (at most a second) leaves the synchronous write at exit its own time.
 */
export function exitAfterLogFlush(
  log: Pick<Logger, 'flush'>,
  code: number,
  withinMs = FLUSH_TIMEOUT_MS + LOG_OUTPUT.exitWaitMs,
): void {
  const waitMs = Math.max(0, Math.min(withinMs - LOG_OUTPUT.exitWaitMs, FLUSH_TIMEOUT_MS))
  const timer = setTimeout(() => process.exit(code), waitMs)
  log.flush(() => {
    clearTimeout(timer)
    process.exit(code)
  })
}

/** Whether logs should be pretty: asked for, or `auto` on a terminal. */
export function wantsPrettyLogs(
  { format }: Pick<LogSettings, 'format'>,
  terminal: { isTTY?: boolean },
): boolean {
  return format === 'pretty' || (format === 'auto' && terminal.isTTY === true)
}
