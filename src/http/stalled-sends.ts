import type { Server } from 'node:http'
import type { Socket } from 'node:net'
import type { Logger } from 'pino'

// As often as Node checks its own request timeouts (connectionsCheckingInterval, app.ts).
const CHECK_EVERY_MS = 1000

/** What a connection had sent at the last check, and since when it has sent nothing more. */
interface Progress {
  sent: number
  since: number
}

/**
 * Closes connections whose queued answer bytes have not moved for `timeoutMs`, checked once a second so no
 * request pays (docs/decisions.md, "An answer's bytes must move"). Stops when the server closes, or when
 * the function it returns is called.
 */
export function closeStalledSends(server: Server, timeoutMs: number, log: Pick<Logger, 'info'>): () => void {
  if (timeoutMs === 0) return () => {}
  const watched = new Map<Socket, Progress>()
  server.on('connection', (socket: Socket) => {
    watched.set(socket, { sent: 0, since: 0 })
    socket.once('close', () => watched.delete(socket))
  })
  const check = setInterval(() => {
    const now = performance.now()
    for (const [socket, progress] of watched) {
      const waiting = socket.writableLength
      if (waiting === 0 || socket.destroyed) {
        progress.since = 0
        continue
      }
      // Bytes handed to the kernel: `bytesWritten` counts those still queued too.
      const sent = socket.bytesWritten - waiting
      if (progress.since === 0 || sent !== progress.sent) {
        progress.sent = sent
        progress.since = now
      } else if (now - progress.since >= timeoutMs) {
        log.info(
          { remoteAddress: socket.remoteAddress, unsentBytes: waiting },
          'connection closed: its client took no answer bytes for SEND_TIMEOUT_MS',
        )
        socket.destroy()
      }
    }
  }, CHECK_EVERY_MS)
  check.unref()
  const stop = () => clearInterval(check)
  server.once('close', stop)
  return stop
}
