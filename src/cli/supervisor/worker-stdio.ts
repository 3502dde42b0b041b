import type { ChildProcess } from 'node:child_process'
import type { Readable } from 'node:stream'

/**
 * Where a worker writes its log: the service's stdout, given as this descriptor, as libuv and Node reset the
 * flags of descriptors 0 to 2 only, which blocked a shared journal (docs/decisions.md, "What can be lost").
 */
export const WORKER_LOG_FD = 4

// Set by the supervisor in each worker's environment: the descriptor of its log. A worker another cluster
// manager started (PM2's cluster mode) has none, and whatever it opened as 4 is not the service's stdout.
const WORKER_LOG_ENV = 'PETSTORE_WORKER_LOG_FD'

/** What the supervisor adds to a worker's environment. */
export const WORKER_ENV = { [WORKER_LOG_ENV]: String(WORKER_LOG_FD) }

/**
 * The log descriptor this worker's supervisor gave it, if `petstore serve` started it; read once, and
 * taken out of the environment, so that nothing the worker starts inherits it.
 */
export function takeWorkerLogFd(): number | undefined {
  const given = process.env[WORKER_LOG_ENV]
  delete process.env[WORKER_LOG_ENV]
  return given === String(WORKER_LOG_FD) ? WORKER_LOG_FD : undefined
}

/** The workers' descriptors: stdin none, stdout and stderr piped to the supervisor, IPC, the log. */
export const WORKER_STDIO = ['ignore', 'pipe', 'pipe', 'ipc', 1]

// A line is passed on in pieces of at most this many bytes, its newline included, each as a line: a run
// without a newline is not held whole, and every write, whole lines of at most PIPE_BUF, is one a pipe takes
// whole, so with stdout and stderr on one pipe (`2>&1 |`) no worker's log line lands inside a relayed one.
const MAX_LINE_BYTES = 4096
// No text of this many UTF-16 units or fewer is over MAX_LINE_BYTES - 1 bytes: only a longer one is measured.
const SURELY_SHORT = Math.floor((MAX_LINE_BYTES - 1) / 3)

/** Whether `text` with a newline is more than MAX_LINE_BYTES (measured up to 4 KiB, not through a long run). */
function tooLong(text: string): boolean {
  if (text.length <= SURELY_SHORT) return false
  return text.length >= MAX_LINE_BYTES || Buffer.byteLength(text) >= MAX_LINE_BYTES
}

/** Where relayed lines go: the supervisor's buffered stderr (log/log-output.ts), one line per call. */
export interface LineSink {
  write(line: string): boolean
}

/**
 * Passes workers' stdout and stderr on to `to` a line at a time, buffered as the log is, never written from
 * the event loop; reading never stops, so no worker waits on its output (docs/decisions.md, "What can be
 * lost").
 */
export class WorkerOutputRelay {
  readonly #to: LineSink

  constructor(to: LineSink) {
    this.#to = to
  }

  /** Relays one worker's stdout and stderr; resolves once both have closed. */
  follow(worker: Pick<ChildProcess, 'stdout' | 'stderr'>): Promise<void> {
    const streams = [worker.stdout, worker.stderr].filter((stream): stream is Readable => stream !== null)
    return Promise.all(streams.map((stream) => this.#relayLines(stream))).then(() => undefined)
  }

  #relayLines(from: Readable): Promise<void> {
    let partial = ''
    // UTF-8 decoded across reads: a character split between two reads comes out whole.
    from.setEncoding('utf8')
    from.on('data', (text: string) => {
      let start = 0
      for (let end = text.indexOf('\n'); end !== -1; end = text.indexOf('\n', start)) {
        this.#pass(`${partial}${text.slice(start, end)}`)
        partial = ''
        start = end + 1
      }
      partial += text.slice(start)
      while (tooLong(partial)) partial = this.#passPiece(partial)
    })
    // An error ends the stream as a close does; nothing more can be read from it.
    from.on('error', () => {})
    return new Promise((resolve) =>
      from.once('close', () => {
        if (partial !== '') this.#pass(partial)
        resolve()
      }),
    )
  }

  /** Passes on `line` (without its newline) as one line, or as pieces of at most MAX_LINE_BYTES. */
  #pass(line: string): void {
    let rest = line
    while (tooLong(rest)) rest = this.#passPiece(rest)
    this.#to.write(`${rest}\n`)
  }

  /**
   * Passes on as a line the longest start of `text` (which is too long) that ends between two characters
   * and takes MAX_LINE_BYTES with its newline; returns the rest.
   */
  #passPiece(text: string): string {
    const bytes = Buffer.from(text.slice(0, MAX_LINE_BYTES))
    let cut = MAX_LINE_BYTES - 1
    // A continuation byte (10xxxxxx) first in what is left: the cut would fall inside a character.
    while (((bytes[cut] as number) & 0xc0) === 0x80) cut--
    const piece = bytes.toString('utf8', 0, cut)
    this.#to.write(`${piece}\n`)
    return text.slice(piece.length)
  }
}
