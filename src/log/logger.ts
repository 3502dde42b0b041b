import type { FastifyRequest } from 'fastify'
import pino, { type DestinationStream, type Logger } from 'pino'
import { clientAddressOf } from './client-address.ts'
import { maskApiKeys } from './key-masking.ts'
import { CONTROL_CLASS, escapedInLine, unicodeEscape } from './line-chunks.ts'
import type { BufferedLogOutput } from './log-output.ts'
import { LOG_OUTPUT } from './log-output-limits.ts'
import { droppedLogLines, type LogStream, markReported, unreportedDrops } from './standard-streams.ts'

/** The `LOG_LEVEL` and `LOG_FORMAT` settings. */
export interface LogSettings {
  level: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent'
  /** `auto` is pretty on a terminal and JSON otherwise. */
  format: 'auto' | 'json' | 'pretty'
}

/**
 * The process logger, made once by the command that runs: JSON lines, or with `pretty` pino-pretty's made
 * from them, to `destination` or descriptor `fd` (a worker's log: cli/supervisor/worker-stdio.ts). Every line
 * is masked of keys just before it is written (docs/decisions.md, "Keys are masked on the way out").
 */
export function createLogger(
  { level }: Pick<LogSettings, 'level'>,
  pretty: false | { colors: boolean } = false,
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
    hooks: { streamWrite: pretty ? (line: string) => visibleControls(maskApiKeys(line)) : maskApiKeys },
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
            options: { translateTime: 'SYS:HH:MM:ss.l', destination: fd, colorize: pretty.colors },
          },
        }
      : {}),
  }
  if (pretty || (destination === undefined && fd === 1)) return pino(options)
  return pino(options, destination ?? pino.destination(fd))
}

// In a JSON line, each escape whole (so that `\\u001b`, a backslash and text, is never taken for one) and
// each character JSON allows raw that a terminal acts on: DEL, C1 controls, line separators.
const ESCAPE_OR_CONTROL = new RegExp(`\\\\(?:u[0-9a-fA-F]{4}|.)|${CONTROL_CLASS}`, 'g')
const SHORT_ESCAPES: Record<string, number> = { b: 0x08, f: 0x0c, n: 0x0a, r: 0x0d, t: 0x09 }

/** Whether a terminal acts on `code`: a control (but the newline and tab a stack holds) or a separator. */
const actsOnTerminal = (code: number): boolean =>
  (code < 0x20 && code !== 0x09 && code !== 0x0a) || escapedInLine(code)

const visibleControl = (found: string): string => {
  if (found.length === 1) return `\\${unicodeEscape(found)}`
  const code = found[1] === 'u' ? Number.parseInt(found.slice(2), 16) : SHORT_ESCAPES[found[1] as string]
  // Its backslash escaped: the value holds the escape as text.
  return code !== undefined && actsOnTerminal(code) ? `\\${found}` : found
}

/**
 * A JSON line whose terminal controls decode to their escapes as text (`\u009b`), not to the controls:
 * pino-pretty prints the values it decodes, and a client's user agent must not move a terminal's cursor or
 * colour what follows (the JSON format escapes them in log-output.ts). Exported so a test can check it.
 */
export function visibleControls(line: string): string {
  return line.replace(ESCAPE_OR_CONTROL, visibleControl)
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
 * is the log's, when buffered. Exported so a test can call it without waiting for its timer.
 */
export function droppedLinesReport(log: Logger, output?: Pick<BufferedLogOutput, 'flush'>): () => void {
  return () => {
    // Request lines waiting to be made are made (and, stdout full, dropped) first, not inside the warn.
    output?.flush()
    for (const stream of ['stdout', 'stderr'] as const) {
      const unsaid = unreportedDrops(stream)
      if (unsaid === 0) continue
      const dropped = droppedLogLines(stream)
      const logDropped = droppedLogLines('stdout')
      log.warn({ droppedLines: unsaid }, DROPPED_ON[stream])
      // Dropped itself (stdout still full): its count is said by the next one that gets through.
      if (droppedLogLines('stdout') === logDropped) markReported(stream, dropped)
    }
  }
}

// How long the log is given, at most, to write its last lines before the process exits without them.
const FLUSH_TIMEOUT_MS = 1000

/** Calls `then`, once, when the log's buffered lines are written, or after `waitMs` if stdout is stuck. */
export function afterLogFlush(log: Pick<Logger, 'flush'>, then: () => void, waitMs = FLUSH_TIMEOUT_MS): void {
  let called = false
  const once = () => {
    if (called) return
    called = true
    clearTimeout(timer)
    then()
  }
  const timer = setTimeout(once, waitMs)
  log.flush(once)
}

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
  afterLogFlush(log, () => process.exit(code), waitMs)
}

/** Whether logs should be pretty: asked for, or `auto` on a terminal. */
export function wantsPrettyLogs(
  { format }: Pick<LogSettings, 'format'>,
  terminal: { isTTY?: boolean },
): boolean {
  return format === 'pretty' || (format === 'auto' && terminal.isTTY === true)
}
