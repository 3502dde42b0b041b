import type { ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyReply } from 'fastify'

/**
 * The status a request's line and metrics are given when its client closed the connection before the
 * answer was sent: nginx's "client closed request". No answer carries it.
 */
export const CLIENT_CLOSED_REQUEST = 499

// Per connection, its requests under way (by their replies): the one (nearly always), several
// (pipelined), or none; once its client closed it, GIVEN_UP: what was under way has been said so.
const UNDER_WAY = Symbol('requests under way')
const GIVEN_UP = Symbol('given up')
type Slot = FastifyReply | Set<FastifyReply> | null | typeof GIVEN_UP
type Watched = Socket & { [UNDER_WAY]?: Slot }

/**
 * Tells `giveUp` of each request whose client ended or reset its connection before the answer was sent;
 * a close of the service's own gives up nothing. One listener per connection (docs/decisions.md, "A request
 * its client gave up on has its line, status 499").
 */
export function watchAbandoned(giveUp: (reply: FastifyReply) => void) {
  const closed = (socket: Watched) => (hadError: boolean) => {
    // Closed by the service: a request still under way keeps its own line, should its answer end.
    if (!hadError && !socket.readableEnded) return
    const slot = socket[UNDER_WAY]
    socket[UNDER_WAY] = GIVEN_UP
    if (slot instanceof Set) for (const reply of slot) giveUp(reply)
    else if (slot !== null && slot !== undefined && slot !== GIVEN_UP) giveUp(slot)
  }
  return {
    /** A request has begun on its connection. */
    begun(reply: FastifyReply): void {
      const socket = reply.request.raw.socket as Watched
      const slot = socket[UNDER_WAY]
      if (slot === null) socket[UNDER_WAY] = reply
      else if (slot === undefined) {
        socket.once('close', closed(socket))
        // Read now, once a connection: Node keeps a peer's address once read, and a closed socket, never
        // asked, has none for the line of a request given up.
        void socket.remoteAddress
        socket[UNDER_WAY] = reply
      } else if (slot instanceof Set) slot.add(reply)
      else if (slot !== GIVEN_UP) socket[UNDER_WAY] = new Set([slot, reply])
    },
    /** Its answer has ended: false if its client had closed the connection first, and it was said so. */
    answered(reply: FastifyReply): boolean {
      const socket = reply.request.raw.socket as Watched
      const slot = socket[UNDER_WAY]
      if (slot === reply) socket[UNDER_WAY] = null
      else if (slot instanceof Set) slot.delete(reply)
      return slot !== GIVEN_UP
    },
  }
}

/** A request answered below the framework (raw-answers.ts), which writes its line: no longer under way. */
export function answeredRaw(response: ServerResponse): void {
  const socket = response.req.socket as Watched
  const slot = socket[UNDER_WAY]
  if (slot instanceof Set) {
    for (const reply of slot) if (reply.raw === response) slot.delete(reply)
  } else if (slot !== null && slot !== undefined && slot !== GIVEN_UP && slot.raw === response) {
    socket[UNDER_WAY] = null
  }
}
