import { write, writeSync } from 'node:fs'
import { LaterLines, type LineMaker } from './later-lines.ts'
import { type Chunk, escapeControls, wholeLines } from './line-chunks.ts'
import { LOG_OUTPUT, REFUSALS_THAT_PASS } from './log-output-limits.ts'
import {
  countDropped,
  type LogStream,
  nonBlockingPipe,
  reportDroppedAtExit,
  reportGone,
  reportRefused,
} from './standard-streams.ts'

const EXIT_WAIT = new Int32Array(new SharedArrayBuffer(4))

/**
 * Standard output, buffered; pino's destination. It never blocks the event loop or throws: a line it cannot
 * keep or write is dropped and counted, and at exit what is buffered is written at once (`writeAtExit`;
 * docs/decisions.md, "The request log is buffered", "What a stopped, slow or closed stdout does").
 */
export class BufferedLogOutput {
  readonly #fd: number
  readonly #stream: LogStream
  readonly #batchBytes: number
  readonly #chunkBytes: number
  // Oldest first; the last is the one being filled, never the one being written.
  #chunks: Chunk[]
  #bytes = 0
  #writing = false
  // A batch's write is started from a microtask, never inside a caller's own synchronous steps: a line
  // written just before an exit then finds no write under way, so none is dropped.
  #batchDue = false
  #broken = false
  // Its file refused the last write with one of REFUSALS_THAT_PASS (said once until a write succeeds).
  #refused = false
  #spare: Buffer[] = []
  #waiters: Array<() => void> = []
  // A write that met a full non-blocking stdout and waits to be tried again: the exit's write takes it over.
  #retry: { timer: NodeJS.Timeout; from: number } | undefined
  // Where the write now in the thread pool started in the oldest chunk: what an exit cannot vouch for.
  #sendingFrom = 0
  readonly #later = new LaterLines()
  #makerFailed = false

  /** `shared`: other processes write to the same open file (WORKERS); `fd`: stdout unless given. */
  constructor({ shared = false, fd = 1 } = {}) {
    this.#fd = nonBlockingPipe(fd)
    this.#stream = fd === 2 ? 'stderr' : 'stdout'
    this.#batchBytes = shared ? LOG_OUTPUT.sharedBatchBytes : LOG_OUTPUT.batchBytes
    this.#chunkBytes = shared ? LOG_OUTPUT.sharedMaxWriteBytes : LOG_OUTPUT.maxWriteBytes
    this.#chunks = [this.#newChunk(this.#chunkBytes)]
    setInterval(() => this.flush(), LOG_OUTPUT.flushIntervalMs).unref()
    process.on('exit', () => {
      this.writeAtExit()
      reportDroppedAtExit(this.#stream)
    })
  }

  /**
   * Takes one line (pino's destination interface), after every line taken to be made later; C1 controls
   * and line separators, which JSON leaves as they are, escaped (`escapeControls`).
   */
  write(line: string): boolean {
    if (this.#later.waiting) this.#makeLater()
    return this.#take(escapeControls(line), false)
  }

  /**
   * Takes one line every character of which is ASCII (the request line when all its text is plain:
   * http/access-line.ts): its bytes are its characters, copied rather than encoded as UTF-8.
   */
  writeAscii(line: string): boolean {
    if (this.#later.waiting) this.#makeLater()
    return this.#take(line, true)
  }

  /**
   * Takes a line to be made later by `make(record)`, in order, before any line taken after it: a run at a
   * time, not between requests' own work (docs/decisions.md, "The request log is buffered"). A maker that
   * throws loses its line, counted as dropped; the first time, an error line says so.
   */
  writeLater<T>(make: LineMaker<T>, record: T): void {
    if (this.#later.take(make, record)) this.#makeLater()
  }

  #makeLater(): void {
    this.#later.makeAll(this.#makerFailure)
  }

  /** A line that cannot be made is counted as dropped, and said once in the log: a bug, not a slow stdout. */
  readonly #makerFailure = (error: unknown): void => {
    countDropped(this.#stream, 1)
    if (this.#makerFailed) return
    this.#makerFailed = true
    const name = error instanceof Error ? error.name : typeof error
    this.#take(
      `${JSON.stringify({ level: 50, time: Date.now(), error: name, msg: 'a log line could not be made: it and any other such line are counted as dropped' })}\n`,
      false,
    )
  }

  #take(line: string, ascii: boolean): boolean {
    if (this.#broken || this.#bytes + line.length > LOG_OUTPUT.maxBufferedBytes) {
      countDropped(this.#stream, 1)
      return true
    }
    let chunk = this.#chunks[this.#chunks.length - 1] as Chunk
    // At most three bytes per UTF-16 unit: the exact length is measured only near a chunk's end.
    if (line.length * (ascii ? 1 : 3) > chunk.capacity - chunk.used) {
      const bytes = ascii ? line.length : Buffer.byteLength(line)
      if (bytes > chunk.capacity - chunk.used) {
        // An empty chunk too small for the line is replaced, so no empty chunk waits ahead of a full one.
        const last = chunk.used === 0 ? this.#chunks.length - 1 : this.#chunks.length
        chunk = this.#newChunk(Math.max(bytes, this.#chunkBytes))
        this.#chunks[last] = chunk
      }
    }
    const bytes = ascii ? chunk.buffer.write(line, chunk.used, 'ascii') : chunk.buffer.write(line, chunk.used)
    chunk.used += bytes
    chunk.lines++
    this.#bytes += bytes
    if (!this.#writing && !this.#batchDue && this.#bytes >= this.#batchBytes) {
      this.#batchDue = true
      queueMicrotask(this.#startDueBatch)
    }
    return true
  }

  readonly #startDueBatch = (): void => {
    this.#batchDue = false
    this.#writeBatch()
  }

  /** Calls `done` once everything taken so far is written (never if stdout is stuck: bound the wait). */
  flush(done?: () => void): void {
    this.#makeLater()
    if (done) this.#waiters.push(done)
    if (!this.#writing) this.#writeBatch()
  }

  /**
   * pino calls this after a fatal line: an ordinary flush. The process does not exit yet; its exits wait
   * for the flush, then write what is left (`writeAtExit`), which a write under way would make them drop.
   */
  flushSync(): void {
    this.flush()
  }

  /**
   * At exit only: writes what is buffered in write-sized chunks, a full stdout retried for `exitWaitMs`; what
   * cannot be written, and what is behind a write still in the thread pool, is counted as dropped (an upper
   * bound: docs/decisions.md, "What can be lost").
   */
  writeAtExit(): void {
    this.#makeLater()
    if (this.#broken) return
    let from = 0
    if (this.#retry) {
      clearTimeout(this.#retry.timer)
      from = this.#retry.from
      this.#retry = undefined
      this.#writing = false
    } else if (this.#writing) {
      this.#dropAll(this.#sendingFrom)
      return
    }
    const waitUntil = performance.now() + LOG_OUTPUT.exitWaitMs
    while (this.#bytes > 0) {
      const chunk = this.#chunks[0] as Chunk
      while (from < chunk.used) {
        try {
          from += writeSync(this.#fd, chunk.buffer, from, chunk.used - from)
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== 'EAGAIN' || performance.now() >= waitUntil) {
            this.#dropAll(from)
            return
          }
          Atomics.wait(EXIT_WAIT, 0, 0, 1)
        }
      }
      from = 0
      this.#written()
    }
  }

  #newChunk(size: number): Chunk {
    const buffer = (size === this.#chunkBytes && this.#spare.pop()) || Buffer.allocUnsafeSlow(size)
    return { buffer, capacity: buffer.length, used: 0, lines: 0 }
  }

  /** The oldest chunk is written: it leaves, its buffer kept for reuse. */
  #written(): void {
    const chunk = this.#chunks.shift() as Chunk
    this.#bytes -= chunk.used
    if (chunk.buffer.length === this.#chunkBytes && this.#spare.length < 2) this.#spare.push(chunk.buffer)
    if (this.#chunks.length === 0) this.#chunks.push(this.#newChunk(this.#chunkBytes))
  }

  #writeBatch(): void {
    if (this.#writing) return
    const chunk = this.#chunks[0] as Chunk
    if (chunk.used === 0) {
      for (const done of this.#waiters.splice(0)) done()
      return
    }
    // Lines from now on go to a new chunk while this one is written.
    if (this.#chunks.length === 1) this.#chunks.push(this.#newChunk(this.#chunkBytes))
    this.#writing = true
    this.#send(chunk, 0)
  }

  /**
   * Writes through the thread pool, never from the event loop: O_NONBLOCK belongs to the open file, which
   * other processes share (a child started with this stdout clears it), so even a stdout once found full
   * may block the next write; only a pipe gets an open file of this process's own (`nonBlockingPipe`).
   */
  #send(chunk: Chunk, from: number): void {
    this.#sendingFrom = from
    write(this.#fd, chunk.buffer, from, chunk.used - from, null, (error, written) => {
      if (error) return this.#failed(error, chunk, from)
      if (from + written < chunk.used) return this.#send(chunk, from + written)
      this.#sent()
    })
  }

  #sent(): void {
    this.#refused = false
    this.#writing = false
    this.#written()
    if (this.#bytes >= this.#batchBytes || this.#waiters.length > 0) this.#writeBatch()
  }

  #failed(error: NodeJS.ErrnoException, chunk: Chunk, from: number): void {
    // A non-blocking stdout that is full, or a file its disk refuses for now: try again, lines keep
    // gathering (up to the bound); the file's refusal is said once on stderr until a write succeeds.
    const refused = error.code !== undefined && REFUSALS_THAT_PASS.has(error.code)
    if (error.code === 'EAGAIN' || refused) {
      if (refused && !this.#refused) reportRefused(this.#stream, error.code)
      this.#refused ||= refused
      const timer = setTimeout(
        () => {
          this.#retry = undefined
          this.#send(chunk, from)
        },
        refused ? LOG_OUTPUT.refusedRetryMs : LOG_OUTPUT.retryMs,
      ).unref()
      this.#retry = { timer, from }
      return
    }
    this.#broken = true
    this.#writing = false
    reportGone(this.#stream, error.code)
    this.#dropAll(from)
    for (const done of this.#waiters.splice(0)) done()
  }

  /**
   * Every buffered line is counted as dropped, but those of the oldest chunk that its first `written`
   * bytes hold whole; the buffer starts empty.
   */
  #dropAll(written = 0): void {
    let lines = -wholeLines(this.#chunks[0] as Chunk, written)
    for (const chunk of this.#chunks) lines += chunk.lines
    countDropped(this.#stream, lines)
    this.#chunks = [this.#newChunk(this.#chunkBytes)]
    this.#bytes = 0
  }
}
