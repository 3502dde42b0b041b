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
 * Makes Node's close after a `Connection: close` answer a lingering one (reading stops, the end is sent, the
 * socket let go after the grace), for the drain's and the pipelining 503s only, so a client's pipelined
 * bytes draw no reset (docs/decisions.md, "The 503's connection lingers").
 */
export function lingerOnClose(socket: Socket): void {
  socket.destroySoon = function lingeringClose(this: Socket) {
    this.pause()
    closeConnection(this)
  }
}
