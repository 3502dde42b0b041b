import { closeSync, constants, fstatSync, openSync, writeSync } from 'node:fs'

/** What a buffered output writes: the log, or, in a supervisor, its workers' output relayed to stderr. */
export type LogStream = 'stdout' | 'stderr'

const dropped: Record<LogStream, number> = { stdout: 0, stderr: 0 }
// Of those, how many a report has said (a warn line in the log, or the exit's line on stderr).
const reported: Record<LogStream, number> = { stdout: 0, stderr: 0 }

/** Counts `lines` this process's output to `stream` dropped: it was full past its buffer, or gone. */
export function countDropped(stream: LogStream, lines: number): void {
  dropped[stream] += lines
}

/** Lines dropped by this process so far, on `stream` or on both. */
export function droppedLogLines(stream?: LogStream): number {
  return stream === undefined ? dropped.stdout + dropped.stderr : dropped[stream]
}

/** Lines dropped on `stream` that no report has said yet. */
export function unreportedDrops(stream: LogStream): number {
  return dropped[stream] - reported[stream]
}

/** Records that a report has said every line dropped on `stream` up to `total` (a past `droppedLogLines`). */
export function markReported(stream: LogStream, total: number): void {
  reported[stream] = Math.max(reported[stream], total)
}

/**
 * `fd`, or when it is a pipe the same pipe opened again through /proc with O_NONBLOCK, which no process
 * sharing it can clear: a blocked write holds the exit, which joins the thread pool (docs/decisions.md,
 * "What can be lost").
 */
export function nonBlockingPipe(fd: number): number {
  try {
    if (fstatSync(fd).isFIFO())
      return openSync(`/proc/self/fd/${fd}`, constants.O_WRONLY | constants.O_NONBLOCK)
  } catch {
    // No /proc, or nobody has the pipe open for reading (ENXIO): the descriptor as it is.
  }
  return fd
}

const STREAM_NAMES: Record<LogStream, string> = { stdout: 'standard output', stderr: 'standard error' }

/**
 * One line on stderr, at exit, for the lines dropped on `stream` that no report has said, as no metric or
 * warning can carry them any more; written through a non-blocking pipe, so a full one loses it rather than
 * holding the exit (docs/decisions.md, "What can be lost").
 */
export function reportDroppedAtExit(stream: LogStream): void {
  const lines = unreportedDrops(stream)
  if (lines === 0) return
  markReported(stream, dropped[stream])
  warnOnStderr(
    { droppedLines: lines },
    `log lines dropped at exit: ${STREAM_NAMES[stream]} did not take them`,
  )
}

/**
 * One line on stderr when the log's stdout is gone for good (EPIPE: its reader exited): from then on every
 * line is dropped, and nothing but the metric would say so. Nothing is said of stderr itself.
 */
export function reportGone(stream: LogStream, code: string | undefined): void {
  if (stream !== 'stdout') return
  warnOnStderr(
    { code },
    `${STREAM_NAMES[stream]} is gone: every log line from now on is dropped, counted in petstore_log_lines_dropped_total`,
  )
}

/**
 * One line on stderr when the log's stdout, a file, refuses writes for now (`ENOSPC`: its disk is full):
 * lines are kept and tried again, and past the buffer dropped and counted, until it takes them.
 */
export function reportRefused(stream: LogStream, code: string | undefined): void {
  if (stream !== 'stdout') return
  warnOnStderr(
    { code },
    `${STREAM_NAMES[stream]} refuses writes for now: log lines are kept and tried again every second, past the buffer dropped and counted in petstore_log_lines_dropped_total`,
  )
}

/** One warn line on stderr, in the log's JSON form, written as `writeToStderr` says. */
function warnOnStderr(fields: object, msg: string): void {
  const line = { level: 40, time: Date.now(), pid: process.pid, ...fields, msg }
  writeToStderr(`${JSON.stringify(line)}\n`)
}

function writeToStderr(text: string): void {
  const stderr = nonBlockingPipe(2)
  try {
    writeSync(stderr, text)
  } catch {
    // Stderr full or gone too: nothing is left to tell.
  } finally {
    if (stderr !== 2) closeSync(stderr)
  }
}
