import type { Socket } from 'node:net'
import type { Duplex } from 'node:stream'

// How long a client is given to read an answer and close after the server ended the connection.
const READ_BEFORE_CLOSE_MS = 1000

/**
 * Ends the connection (after `bytes`, if any), then lets go of it a moment later whatever the client does:
 * a client that never closes its side would otherwise keep the socket, and its MAX_CONNECTIONS slot, for
 * good. `end` first rather than `destroy`, so that a reset does not discard the answer before it is read.
 */
export function closeConnection(socket: Duplex, bytes?: string): void {
  socket.end(bytes)
  const letGo = setTimeout(() => socket.destroy(), READ_BEFORE_CLOSE_MS)
  letGo.unref()
  socket.once('close', () => clearTimeout(letGo))
}

/**
 * Node's own close of `socket` after its answer with `Connection: close` (`destroySoon`), made a lingering
 * one, for the 503s of a drain and of too many pipelined requests: reading stops, the end is sent, and
 * the socket is let go after the grace (or once closed). Node destroyed it as soon as the end was sent,
 * and requests a pipelining client sent meanwhile drew a reset from the kernel, which made the client
 * drop the 503 unread. Only for those: a paused socket does not see the client close, so each lingers.
 */
export function lingerOnClose(socket: Socket): void {
  socket.destroySoon = function lingeringClose(this: Socket) {
    this.pause()
    closeConnection(this)
  }
}
