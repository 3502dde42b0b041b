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
 * Asks workers to stop: by message once a worker says it takes them, so a Ctrl-C reaching it and its
 * supervisor counts as one ask, not the second that ends `SHUTDOWN_DELAY_MS`; by SIGTERM before (its modules
 * still loading) (docs/decisions.md, "A stop announced before the listener closes").
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
