import type { Worker } from 'node:cluster'

/** The supervisor's request that a worker stop, with the signal the supervisor was stopped by. */
interface StopRequest {
  type: 'petstore:stop'
  signal: NodeJS.Signals
}

/** A worker's word that it takes stop requests by message from now on. */
const TAKES_REQUESTS = { type: 'petstore:takes-stop-requests' } as const

function isStopRequest(message: unknown): message is StopRequest {
  return (message as StopRequest | null)?.type === 'petstore:stop'
}

/**
 * How the supervisor asks its workers to stop. A worker that has said it takes requests is asked by
 * message, which it tells apart from a stop signal of its own: a terminal's Ctrl-C, or a kill of the whole
 * group, reaches it and its supervisor, and the same stop asked both ways must not count as the second
 * ask that ends the delay (`SHUTDOWN_DELAY_MS`). It says so as it starts, long before it serves; until
 * then (its modules loading) it gets SIGTERM, which ends it as it ends any process.
 */
export class WorkerStops {
  readonly #takingRequests = new WeakSet<Worker>()

  /** Follows `worker`'s word that it takes requests by message. */
  follow(worker: Worker): void {
    worker.on('message', (message) => {
      if ((message as typeof TAKES_REQUESTS | null)?.type === TAKES_REQUESTS.type) {
        this.#takingRequests.add(worker)
      }
    })
  }

  ask(worker: Worker, signal: NodeJS.Signals): void {
    if (!this.#takingRequests.has(worker) || !worker.isConnected()) {
      worker.process.kill('SIGTERM')
      return
    }
    const request: StopRequest = { type: 'petstore:stop', signal }
    // Its channel closed meanwhile (the worker on its way out): the signal says the same.
    worker.send(request, undefined, {}, (error) => {
      if (error) worker.process.kill('SIGTERM')
    })
  }
}

/**
 * In a worker, as it starts: takes the supervisor's stop requests from now on, and says so. Each goes to
 * the handler `serving` is given once the worker serves; one that comes before ends the worker at once
 * (exit 0), as SIGTERM would: it has no request to drain.
 */
export function takeStopRequests(): { serving(stop: (signal: NodeJS.Signals) => void): void } {
  let stop: ((signal: NodeJS.Signals) => void) | undefined
  process.on('message', (message) => {
    if (!isStopRequest(message)) return
    if (stop === undefined) process.exit(0)
    stop(message.signal)
  })
  // With a callback, a channel closing meanwhile is no error event.
  if (process.connected) process.send?.(TAKES_REQUESTS, undefined, {}, () => {})
  return {
    serving(handler) {
      stop = handler
    },
  }
}
