import { connect, type Socket } from 'node:net'
import type { LoadRequest } from './scenarios.ts'

/**
 * Keep-alive HTTP/1.1 connections to one server, one request at a time on each, the rest queued: the
 * fixed-rate generator's client. Its own for its cost: docs/benchmarks/tuning.md, "Latency at a fixed
 * rate". Answers carry a Content-Length (the service's and both baselines' do) or come in chunks.
 */

const HEADER_END = Buffer.from('\r\n\r\n')

interface Pending {
  bytes: Buffer
  settle: (error: Error | undefined, status: number) => void
}

/** The bytes of `request` as sent to `origin`'s host. */
export function requestBytes(
  origin: string,
  { method, path, headers, body, freshIdempotencyKey }: LoadRequest,
): Buffer {
  // One set of bytes is sent again and again: a key of its own per request would need more.
  if (freshIdempotencyKey) throw new Error('requests at a fixed rate cannot carry fresh Idempotency-Keys')
  // autocannon's bytes, header for header: a header set the service has not seen would be new feedback for
  // V8, and the code it had optimized for the measured turns would be compiled again in the timed one.
  const lines = [`${method} ${path} HTTP/1.1`, `Host: ${new URL(origin).host}`, 'Connection: keep-alive']
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`)
  if (body !== undefined) lines.push(`Content-Length: ${Buffer.byteLength(body)}`)
  return Buffer.from(`${lines.join('\r\n')}\r\n\r\n${body ?? ''}`)
}

/**
 * Where the answer whose head is `head` ends in `received`, its body starting at `bodyStart`: undefined
 * while it has not all come, null when its end cannot be known (no length, or a malformed chunk).
 */
function answerEnd(head: string, received: Buffer, bodyStart: number): number | null | undefined {
  const length = /\r\ncontent-length: *(\d+)/i.exec(head)?.[1]
  if (length !== undefined) {
    const end = bodyStart + Number(length)
    return received.length >= end ? end : undefined
  }
  if (!/\r\ntransfer-encoding: *chunked/i.test(head)) return null
  // Chunk after chunk, each a hexadecimal size line, its bytes and a CRLF, until the one of size 0 and
  // the empty line after it (trailers are not read: none of the servers measured sends them).
  for (let at = bodyStart; ; ) {
    const lineEnd = received.indexOf('\r\n', at)
    if (lineEnd < 0) return undefined
    const sizeLine = /^[0-9a-f]+/i.exec(received.toString('latin1', at, lineEnd))?.[0]
    if (sizeLine === undefined) return null
    const size = Number.parseInt(sizeLine, 16)
    const next = lineEnd + 2 + size + 2
    if (received.length < next) return undefined
    if (size === 0) return next
    at = next
  }
}

class Connection {
  #socket: Socket | undefined
  #received: Buffer = Buffer.alloc(0)
  #pending: Pending | undefined
  readonly #url: URL
  readonly #free: (connection: Connection) => void

  constructor(url: URL, free: (connection: Connection) => void) {
    this.#url = url
    this.#free = free
  }

  /** Sends on this connection, opened again first if it was closed. */
  send(pending: Pending): void {
    this.#pending = pending
    this.#socket ??= this.#open()
    this.#socket.write(pending.bytes)
  }

  /** Closed now, failing what is in flight; the next request opens it again. */
  close(error = new Error('connection closed')): void {
    this.#drop()
    this.#settle(error, 0)
  }

  /** The socket let go of: its own 'close' then fails nothing, and the next request opens another. */
  #drop(): void {
    const socket = this.#socket
    this.#socket = undefined
    socket?.destroy()
  }

  #open(): Socket {
    const socket = connect({ host: this.#url.hostname, port: Number(this.#url.port), noDelay: true })
    socket.on('data', (chunk: Buffer) => this.#read(chunk))
    socket.on('error', () => {})
    socket.on('close', () => {
      if (this.#socket !== socket) return
      this.#socket = undefined
      this.#settle(new Error('connection closed by the server before the answer'), 0)
    })
    return socket
  }

  #read(chunk: Buffer): void {
    // Bytes with no request waiting (after an answer's end) would be taken for the next answer's start.
    if (this.#pending === undefined) {
      this.close()
      return
    }
    const received = this.#received.length === 0 ? chunk : Buffer.concat([this.#received, chunk])
    const headEnd = received.indexOf(HEADER_END)
    const head = headEnd < 0 ? '' : received.toString('latin1', 0, headEnd)
    const end = headEnd < 0 ? undefined : answerEnd(head, received, headEnd + 4)
    if (end === null) {
      this.close(new Error('an answer whose end cannot be found'))
      return
    }
    if (end === undefined) {
      this.#received = received
      return
    }
    // More bytes than the answer, or a server closing after it: the connection is not used again.
    if (received.length > end || /\r\nconnection: *close/i.test(head)) this.#drop()
    this.#settle(undefined, Number(head.slice(9, 12)))
  }

  #settle(error: Error | undefined, status: number): void {
    const pending = this.#pending
    this.#pending = undefined
    this.#received = Buffer.alloc(0)
    if (pending === undefined) return
    pending.settle(error, status)
    this.#free(this)
  }
}

export class HttpConnections {
  readonly #all: Connection[]
  /** Taken first in, first out: every connection is used in turn, none left idle past a keep-alive. */
  readonly #idle: Connection[]
  readonly #queued: Pending[] = []

  constructor(origin: string, connections: number) {
    const url = new URL(origin)
    this.#all = Array.from({ length: connections }, () => new Connection(url, (free) => this.#next(free)))
    this.#idle = [...this.#all]
  }

  /** The answer's status; rejected when the connection fails or closes before it, or is closed. */
  request(bytes: Buffer): Promise<number> {
    return new Promise((resolve, reject) => {
      const pending: Pending = { bytes, settle: (error, status) => (error ? reject(error) : resolve(status)) }
      const connection = this.#idle.shift()
      if (connection) connection.send(pending)
      else this.#queued.push(pending)
    })
  }

  /** One request on every connection at once, so that each is open before anything is timed. */
  async warm(bytes: Buffer): Promise<void> {
    await Promise.allSettled(this.#all.map(() => this.request(bytes)))
  }

  /** Every connection closed: what is in flight or queued fails. */
  close(): void {
    const queued = this.#queued.splice(0)
    for (const connection of this.#all) connection.close()
    for (const pending of queued) pending.settle(new Error('connections closed'), 0)
  }

  #next(connection: Connection): void {
    const pending = this.#queued.shift()
    if (pending) connection.send(pending)
    else this.#idle.push(connection)
  }
}
