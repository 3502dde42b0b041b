import type { ChildProcess } from 'node:child_process'
import { closeSync, createWriteStream, openSync, readSync, type WriteStream } from 'node:fs'

/**
 * Where the service's standard output (its log, one line per request) goes:
 * - `file`: a file on disk, as a deployment that logs to a file (or a collector that tails one) has it:
 *   the service pays for its own writes, and nothing reads the file while a run is measured;
 * - `pipe`: a pipe the bench itself drains on the server's core, so the reader's CPU (standing in for a
 *   log collector) is taken from the service's core.
 */
export const LOG_SINKS = ['file', 'pipe'] as const
export type LogSink = (typeof LOG_SINKS)[number]

const NEWLINE = 0x0a
// A JSON log line at warn (40) or worse; request lines are info (30).
const WARNING_MARKERS = ['"level":40', '"level":50', '"level":60']
const READ_CHUNK = 1024 * 1024
// A line is a few hundred bytes and names its level first: a longer one is searched in its first 64 KiB.
const CARRY_BYTES = 64 * 1024

/** What a child wrote: stderr and the warning lines of stdout (the tail only), and stdout's byte count. */
export interface ServiceOutput {
  output(): string
  stdoutBytes(): number
  /** Reads what the file sink has gained since the last call (after a round's load, never during it). */
  collect(): void
  close(): void
}

/**
 * Searches stdout's lines for warnings without decoding the request lines, and copies them to `copyTo` if
 * asked, whichever sink they come from. A chunk is searched where it lies and the unfinished line at its
 * end kept in one buffer: the search allocates nothing, so it starts no collection of the bench's own on
 * the servers' core (docs/benchmarks/tuning.md, "The bench's own collections").
 */
function lineScanner(copyTo: string | undefined) {
  const copy: WriteStream | undefined =
    copyTo === undefined ? undefined : createWriteStream(copyTo, { flags: 'a' })
  let output = ''
  let bytes = 0
  const carry = Buffer.alloc(CARRY_BYTES)
  let carried = 0
  const append = (text: string) => {
    output = (output + text).slice(-20_000)
  }
  const keepWarnings = (lines: Buffer) => {
    if (!WARNING_MARKERS.some((marker) => lines.includes(marker))) return
    for (const line of lines.toString().split('\n')) {
      if (WARNING_MARKERS.some((marker) => line.includes(marker))) append(`${line}\n`)
    }
  }
  const scan = (chunk: Buffer) => {
    bytes += chunk.length
    copy?.write(Buffer.from(chunk))
    const first = chunk.indexOf(NEWLINE)
    if (first === -1) {
      carried += chunk.copy(carry, carried)
      return
    }
    let start = 0
    if (carried > 0) {
      carried += chunk.copy(carry, carried, 0, first)
      keepWarnings(carry.subarray(0, carried))
      start = first + 1
    }
    const last = chunk.lastIndexOf(NEWLINE)
    if (last > start) keepWarnings(chunk.subarray(start, last))
    carried = chunk.copy(carry, 0, last + 1)
  }
  return { scan, append, output: () => output, bytes: () => bytes, close: () => copy?.end() }
}

/** For the file sink: the file, opened for appending (the child's stdout) and reading (the bench's). */
export function openLogFile(path: string): number {
  return openSync(path, 'a+')
}

/**
 * Collects a child's output, so a failure can say why. On a pipe, as it arrives (on the server's core, as
 * a log collector would); from a file, only when `collect` is called, outside the measured runs.
 */
export function captureOutput(
  child: ChildProcess,
  logFd: number | undefined,
  copyTo?: string,
): ServiceOutput {
  const scanner = lineScanner(copyTo)
  child.stderr?.on('data', (chunk: Buffer) => scanner.append(chunk.toString()))
  if (logFd === undefined) {
    child.stdout?.on('data', scanner.scan)
    return { output: scanner.output, stdoutBytes: scanner.bytes, collect: () => {}, close: scanner.close }
  }
  const reader = logFd
  const buffer = Buffer.alloc(READ_CHUNK)
  // The file is kept whole (a few GB at most, in the run's temporary directory, removed at the end).
  let position = 0
  const collect = () => {
    for (;;) {
      const read = readSync(reader, buffer, 0, READ_CHUNK, position)
      if (read === 0) break
      scanner.scan(buffer.subarray(0, read))
      position += read
    }
  }
  return {
    output: () => {
      collect()
      return scanner.output()
    },
    stdoutBytes: scanner.bytes,
    collect,
    close: () => {
      collect()
      closeSync(reader)
      scanner.close()
    },
  }
}
