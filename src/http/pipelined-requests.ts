import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import { ApiError, serviceUnavailable } from '../errors.ts'
import { lingerOnClose } from './connection-close.ts'

/**
 * The most requests of one connection that wait for their answers at once. Node reads every request a
 * client pipelines and runs them all, their answers held in memory until the ones before are sent: 3,000
 * pipelined for the docs page's script held 390 MB (docs/decisions.md, "Pipelined requests").
 */
export const PIPELINED_MAX = 32

// Connections that have had an answer queued behind another, until they close: how many of their requests
// wait for their answers. Nearly every request is alone on its connection, and then nothing is counted.
const waiting = new Map<Socket, number>()

export const TOO_MANY_PIPELINED = () =>
  serviceUnavailable(
    `over ${PIPELINED_MAX} requests of this connection wait for their answers; read them, or send fewer at ` +
      'once, and retry on a new connection',
    { headers: { connection: 'close' } },
  )

// Never sent (its connection is closed): it gives the request's line its code, as a refusal, not a fault.
export const CLOSED_BEFORE_TURN = () =>
  new ApiError('bad_request', 'sent behind an answer that closed the connection; not processed', {
    connection: 'close',
  })

/**
 * Counts a request in as waiting on its connection, and says whether it may be served: not once more than
 * PIPELINED_MAX wait, nor ever after on that connection, which ends with the refusal (RFC 9112 §9.6: nothing
 * after a `close` is processed, so a request sent behind it cannot change data unanswered).
 */
export function admitPipelined(socket: Socket, response: ServerResponse): boolean {
  // Node gives a response its socket at once unless another answer is still being sent on it.
  const queued = response.socket === null
  if (waiting.size === 0 && !queued) return true
  const known = waiting.get(socket)
  if (known === undefined) {
    if (!queued) return true
    // The first answer queued: the one being sent waits too.
    waiting.set(socket, 2)
    socket.once('close', () => waiting.delete(socket))
    return true
  }
  // Refused for good: a count no answer brings back under the limit.
  if (known >= PIPELINED_MAX) {
    waiting.set(socket, Number.POSITIVE_INFINITY)
    return false
  }
  waiting.set(socket, known + 1)
  return true
}

/**
 * Calls `proceed` once the answers before this request's are sent: with true if its connection stays open
 * for it, false if it closes first (an answer before it said `close`: RFC 9112 §9.6, nothing after it is
 * processed). Node parses and emits pipelined requests before the answers ahead of them are decided.
 */
export function whenItsTurn(
  socket: Socket,
  response: ServerResponse,
  proceed: (open: boolean) => void,
): void {
  // Ended: the answer before said `close`, and Node had parsed this request from what it had read already.
  if (socket.writableEnded || socket.destroyed) {
    proceed(false)
    return
  }
  if (response.socket !== null) {
    proceed(true)
    return
  }
  const onSocket = () => {
    turns.get(socket)?.delete(onClose)
    proceed(!socket.writableEnded)
  }
  const onClose = () => {
    response.off('socket', onSocket)
    proceed(false)
  }
  response.once('socket', onSocket)
  waitForClose(socket, onClose)
}

// The requests of a connection waiting for their turn, told of its close by one listener (up to
// PIPELINED_MAX of them: a listener each would draw Node's warning of a leak from the eleventh).
const turns = new WeakMap<Socket, Set<() => void>>()

function waitForClose(socket: Socket, onClose: () => void): void {
  let waiting = turns.get(socket)
  if (waiting === undefined) {
    const all = new Set<() => void>()
    socket.once('close', () => {
      for (const waiter of all) waiter()
      all.clear()
    })
    turns.set(socket, all)
    waiting = all
  }
  waiting.add(onClose)
}

/** A request of this connection has its answer sent (or given up). */
export function answeredPipelined(socket: Socket): void {
  if (waiting.size === 0) return
  const known = waiting.get(socket)
  if (known !== undefined && known > 0) waiting.set(socket, known - 1)
}

/**
 * The same count for a listener without the framework's hooks (metrics): whether `request` may be served,
 * its answer counting it out once sent or given up. A refused one's connection lingers as the API's does.
 */
export function admitPipelinedRaw(request: IncomingMessage, response: ServerResponse): boolean {
  const socket = request.socket
  if (!admitPipelined(socket, response)) {
    lingerOnClose(socket)
    return false
  }
  response.once('close', () => answeredPipelined(socket))
  return true
}
