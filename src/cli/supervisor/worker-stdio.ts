import type { ChildProcess } from 'node:child_process'
import type { Readable } from 'node:stream'

/**
 * Where a worker writes its log: the service's stdout, given to it as this descriptor. A worker's own
 * stdin, stdout and stderr are not the service's: libuv clears O_NONBLOCK on a child's descriptors 0 to 2
 * as it starts, and Node restores at exit the flags they had at its start, which, on an open file every
 * process shares (systemd's journal socket), made the others' writes wait on a journal that stopped
 * reading. Neither touches a descriptor above 2 (docs/decisions.md, "What a stopped, slow or closed
 * stdout does").
 */
export const WORKER_LOG_FD = 4

/** The workers' descriptors, in order: stdin none, stdout and stderr piped to the supervisor, IPC, the log. */
export const WORKER_STDIO = ['ignore', 'pipe', 'pipe', 'ipc', 1]

// What the supervisor's stderr may hold back for workers' output; past it their lines are dropped, and
// counted in a line once it takes lines again. A longer run without a newline is passed on as a line.
const MAX_BACKLOG_BYTES = 1024 * 1024
const MAX_LINE_CHARS = 16 * 1024

type Destination = NodeJS.WritableStream & { writableLength: number }

/**
 * Passes workers' stdout and stderr (Node's warnings, a failure's last words, the lines a log dropped at
 * exit) to the supervisor's stderr, whole lines at a time so that no two processes' lines mix. Reading
 * never stops, so a worker never waits on its output; a stderr that does not keep up or is gone (EPIPE)
 * costs lines, never the supervisor.
 */
export class WorkerOutputRelay {
  readonly #to: Destination
  #dropped = 0
  #broken = false

  constructor(to: Destination = process.stderr) {
    this.#to = to
    to.on('error', () => {
      this.#broken = true
    })
  }

  /** Relays one worker's stdout and stderr; resolves once both have closed. */
  follow(worker: Pick<ChildProcess, 'stdout' | 'stderr'>): Promise<void> {
    const streams = [worker.stdout, worker.stderr].filter((stream): stream is Readable => stream !== null)
    return Promise.all(streams.map((stream) => this.#relayLines(stream))).then(() => undefined)
  }

  #relayLines(from: Readable): Promise<void> {
    let partial = ''
    from.setEncoding('utf8')
    from.on('data', (text: string) => {
      const end = text.lastIndexOf('\n')
      if (end === -1) {
        partial += text
      } else {
        this.#pass(partial + text.slice(0, end + 1))
        partial = text.slice(end + 1)
      }
      if (partial.length > MAX_LINE_CHARS) {
        this.#pass(`${partial}\n`)
        partial = ''
      }
    })
    // An error ends the stream as a close does; nothing more can be read from it.
    from.on('error', () => {})
    return new Promise((resolve) =>
      from.once('close', () => {
        if (partial !== '') this.#pass(`${partial}\n`)
        resolve()
      }),
    )
  }

  #pass(lines: string): void {
    if (this.#broken || this.#to.writableLength > MAX_BACKLOG_BYTES) {
      this.#dropped += countLines(lines)
      return
    }
    if (this.#dropped > 0) {
      const report = { level: 40, time: Date.now(), droppedLines: this.#dropped, msg: DROPPED }
      this.#to.write(`${JSON.stringify(report)}\n`)
      this.#dropped = 0
    }
    this.#to.write(lines)
  }
}

const DROPPED = "workers' output lines dropped: standard error did not keep up"

function countLines(text: string): number {
  let lines = 0
  for (let at = text.indexOf('\n'); at !== -1; at = text.indexOf('\n', at + 1)) lines++
  return lines
}
