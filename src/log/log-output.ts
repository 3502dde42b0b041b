import { write, writeSync } from 'node:fs'

/**
 * How a server writes its log to standard output: buffered and asynchronous, so no request waits for a
 * write (docs/decisions.md, "Request log"). Lines are gathered until BATCH_BYTES, or for at most
 * FLUSH_INTERVAL_MS, then written by libuv's thread pool, a batch per write().
 */
export const LOG_OUTPUT = {
  // Alone on its stdout, a process writes large batches: each write() wakes a thread and the reader.
  batchBytes: 32 * 1024,
  maxWriteBytes: 64 * 1024,
  // Workers sharing one stdout write at most PIPE_BUF bytes at a time (unless one line is longer): a pipe
  // takes such a write whole, so their lines never interleave.
  sharedBatchBytes: 3584,
  sharedMaxWriteBytes: 4096,
  flushIntervalMs: 500,
  // What a stdout that does not keep up may hold back; past it, lines are dropped and counted.
  maxBufferedBytes: 8 * 1024 * 1024,
  // How often dropped lines are reported in the log itself (once it takes lines again).
  dropReportIntervalMs: 10_000,
  retryMs: 10,
  // How long the write at exit retries a full non-blocking stdout before counting the rest as dropped.
  exitWaitMs: 200,
} as const

const EXIT_WAIT = new Int32Array(new SharedArrayBuffer(4))

let dropped = 0

/** Log lines dropped by this process so far: stdout was full past the buffer, or gone. */
export function droppedLogLines(): number {
  return dropped
}

/**
 * Standard output, buffered; pino's destination. It never blocks the event loop or throws: past
 * `maxBufferedBytes` (a stdout nobody reads), a line is dropped and counted; after a write error other
 * than EAGAIN (EPIPE: the reader is gone) every line is. At exit, what is buffered is written at once,
 * unless a write is still pending (a stuck stdout), which would hold the exit forever.
 */
export class BufferedLogOutput {
  readonly #fd: number
  readonly #batchBytes: number
  readonly #maxWriteBytes: number
  #lines: string[] = []
  #bytes = 0
  #writing = false
  #broken = false
  #waiters: Array<() => void> = []

  /** `shared`: other processes write to the same stdout (WORKERS). */
  constructor({ shared = false, fd = 1 } = {}) {
    this.#fd = fd
    this.#batchBytes = shared ? LOG_OUTPUT.sharedBatchBytes : LOG_OUTPUT.batchBytes
    this.#maxWriteBytes = shared ? LOG_OUTPUT.sharedMaxWriteBytes : LOG_OUTPUT.maxWriteBytes
    setInterval(() => this.#writeBatch(), LOG_OUTPUT.flushIntervalMs).unref()
    process.on('exit', () => this.flushSync())
  }

  /** Takes one line (pino's destination interface). */
  write(line: string): boolean {
    const bytes = Buffer.byteLength(line)
    if (this.#broken || this.#bytes + bytes > LOG_OUTPUT.maxBufferedBytes) {
      dropped++
      return true
    }
    this.#lines.push(line)
    this.#bytes += bytes
    if (!this.#writing && this.#bytes >= this.#batchBytes) this.#writeBatch()
    return true
  }

  /** Calls `done` once everything taken so far is written (never if stdout is stuck: bound the wait). */
  flush(done?: () => void): void {
    if (done) this.#waiters.push(done)
    if (!this.#writing) this.#writeBatch()
  }

  /**
   * Writes what is buffered before the process exits, unless a write is pending: batch by batch (each at
   * most the write size, so workers' lines stay whole), the rest of a partial write after it, a full
   * non-blocking stdout retried briefly; what still cannot be written is counted as dropped.
   */
  flushSync(): void {
    if (this.#writing || this.#broken) return
    let waitedMs = 0
    while (this.#lines.length > 0) {
      let batch = Buffer.from(this.#take(this.#maxWriteBytes))
      while (batch.length > 0) {
        try {
          batch = batch.subarray(writeSync(this.#fd, batch))
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== 'EAGAIN' || waitedMs >= LOG_OUTPUT.exitWaitMs) {
            dropped += this.#lines.length + (batch.toString().match(/\n/g)?.length ?? 0)
            this.#lines = []
            this.#bytes = 0
            return
          }
          Atomics.wait(EXIT_WAIT, 0, 0, 1)
          waitedMs++
        }
      }
    }
  }

  /** The first lines, up to `maxBytes` (at least one), joined; they leave the buffer. */
  #take(maxBytes: number): string {
    let count = 0
    let bytes = 0
    for (const line of this.#lines) {
      const length = Buffer.byteLength(line)
      if (count > 0 && bytes + length > maxBytes) break
      bytes += length
      count++
    }
    this.#bytes -= bytes
    return this.#lines.splice(0, count).join('')
  }

  #writeBatch(): void {
    if (this.#writing) return
    if (this.#lines.length === 0) {
      for (const done of this.#waiters.splice(0)) done()
      return
    }
    this.#writing = true
    this.#send(Buffer.from(this.#take(this.#maxWriteBytes)))
  }

  #send(batch: Buffer): void {
    write(this.#fd, batch, 0, batch.length, null, (error, written) => {
      if (error) return this.#failed(error, batch)
      if (written < batch.length) return this.#send(batch.subarray(written))
      this.#writing = false
      if (this.#bytes >= this.#batchBytes || this.#waiters.length > 0) this.#writeBatch()
    })
  }

  #failed(error: NodeJS.ErrnoException, batch: Buffer): void {
    // A non-blocking stdout that is full: try again shortly, lines keep gathering (up to the bound).
    if (error.code === 'EAGAIN') {
      setTimeout(() => this.#send(batch), LOG_OUTPUT.retryMs).unref()
      return
    }
    this.#broken = true
    this.#writing = false
    dropped += this.#lines.length + batch.toString().split('\n').length - 1
    this.#lines = []
    this.#bytes = 0
    for (const done of this.#waiters.splice(0)) done()
  }
}
