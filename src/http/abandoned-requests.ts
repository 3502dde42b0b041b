import type { Socket } from 'node:net'
import type { FastifyReply } from 'fastify'

/**
 * The status a request's line and metrics are given when its connection closed before its answer was
 * sent (the client gave up, or a shutdown cut it): nginx's "client closed request". No answer carries it.
 */
export const CLIENT_CLOSED_REQUEST = 499

// Per connection, its requests under way (by their replies): the one (nearly always), several (pipelined), or none; then, once
// it closed, CLOSED: what was under way has been said as given up.
const UNDER_WAY = Symbol('requests under way')
const CLOSED = Symbol('closed')
type Slot = FastifyReply | Set<FastifyReply> | null | typeof CLOSED
type Watched = Socket & { [UNDER_WAY]?: Slot }

/**
 * Tells `giveUp` of each request whose connection closes before its answer is sent: Fastify's onResponse
 * never runs for one (it waits for the answer's end or error), so its line and its time were lost, the
 * slowest requests first (a frozen database's, which clients leave at their own timeout). One listener
 * per connection, and per request a field set and cleared on it.
 */
export function watchAbandoned(giveUp: (reply: FastifyReply) => void) {
  const closed = (socket: Watched) => () => {
    const slot = socket[UNDER_WAY]
    socket[UNDER_WAY] = CLOSED
    if (slot instanceof Set) for (const reply of slot) giveUp(reply)
    else if (slot !== null && slot !== undefined && slot !== CLOSED) giveUp(slot)
  }
  return {
    /** A request has begun on its connection. */
    begun(reply: FastifyReply): void {
      const socket = reply.request.raw.socket as Watched
      const slot = socket[UNDER_WAY]
      if (slot === null) socket[UNDER_WAY] = reply
      else if (slot === undefined) {
        socket.once('close', closed(socket))
        socket[UNDER_WAY] = reply
      } else if (slot instanceof Set) slot.add(reply)
      else if (slot !== CLOSED) socket[UNDER_WAY] = new Set([slot, reply])
    },
    /** Its answer has ended: false if its connection had closed first, and it was said as given up. */
    answered(reply: FastifyReply): boolean {
      const socket = reply.request.raw.socket as Watched
      const slot = socket[UNDER_WAY]
      if (slot === reply) socket[UNDER_WAY] = null
      else if (slot instanceof Set) slot.delete(reply)
      return slot !== CLOSED
    },
  }
}
