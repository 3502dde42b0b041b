import { connect } from 'node:net'

export interface Answer {
  status: number
  /** The answer carried `Connection: close`: the server said it would close after it. */
  close: boolean
}

/** What one connection saw, from its first request to its close. */
export interface ConnectionRecord {
  /** Complete requests written before the client saw the server end the connection. */
  written: number
  answers: Answer[]
  /** Bytes of an answer cut off by the close (empty when every answer arrived whole). */
  partial: string
  /** How the connection ended: `end` (the server's FIN), or the socket error's code (`ECONNRESET`). */
  ending: string
}

/**
 * One kept-alive connection that keeps `depth` requests outstanding (pipelined when depth > 1) and writes
 * the next as soon as an answer arrives, until the server answers with `Connection: close` or ends the
 * connection, or `stop()` is called. `record` is what it wrote and read so far; `closed` resolves with it
 * once the connection is closed.
 */
export function keepAliveClient(
  origin: string,
  depth: number,
  requestBytes: (n: number) => string,
): { record: ConnectionRecord; closed: Promise<ConnectionRecord>; stop(): void } {
  const socket = connect({ host: '127.0.0.1', port: Number(new URL(origin).port) })
  const record: ConnectionRecord = { written: 0, answers: [], partial: '', ending: '' }
  let writing = true
  let buffered = Buffer.alloc(0)
  const writeNext = () => {
    if (!writing || socket.destroyed || !socket.writable) return
    socket.write(requestBytes(record.written))
    record.written++
  }
  socket.on('connect', () => {
    for (let i = 0; i < depth; i++) writeNext()
  })
  socket.on('end', () => {
    writing = false
    record.ending ||= 'end'
  })
  // A reset is recorded as what it is: a close with requests unanswered.
  socket.on('error', (error: NodeJS.ErrnoException) => {
    record.ending ||= error.code ?? error.message
  })
  socket.on('data', (chunk: Buffer) => {
    buffered = Buffer.concat([buffered, chunk])
    for (;;) {
      const headEnd = buffered.indexOf('\r\n\r\n')
      if (headEnd === -1) return
      const head = buffered.subarray(0, headEnd).toString('latin1')
      const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0)
      if (buffered.length < headEnd + 4 + length) return
      buffered = buffered.subarray(headEnd + 4 + length)
      const close = /\r\nconnection: *close/i.test(head)
      record.answers.push({ status: Number(head.slice(9, 12)), close })
      if (close) writing = false
      writeNext()
    }
  })
  const closed = new Promise<ConnectionRecord>((resolve) =>
    socket.on('close', () => {
      record.partial = buffered.toString('latin1')
      resolve(record)
    }),
  )
  return {
    record,
    closed,
    stop() {
      writing = false
    },
  }
}

/**
 * The requests of a connection that were written and never answered, though nothing excuses it: requests
 * pipelined behind an answer that carried `Connection: close` may go unanswered (RFC 9112 §9.6: the
 * server processes nothing after it, and the client knows to send them again), any other may not.
 */
export function unansweredWithoutNotice(record: ConnectionRecord): number {
  const closeAt = record.answers.findIndex((answer) => answer.close)
  return closeAt === -1 ? record.written - record.answers.length : 0
}
