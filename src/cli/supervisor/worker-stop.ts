import type { Worker } from 'node:cluster'

/** The supervisor's request that a worker stop, with the signal the supervisor was stopped by. */
interface StopRequest {
  type: 'petstore:stop'
  signal: NodeJS.Signals
}

function isStopRequest(message: unknown): message is StopRequest {
  return (message as StopRequest | null)?.type === 'petstore:stop'
}

/**
 * How the supervisor asks its workers to stop. A listening worker is asked by message, which it tells
 * apart from a stop signal of its own: a terminal's Ctrl-C, or a kill of the whole group, reaches it and
 * its supervisor, and the same stop asked both ways must not count as the second ask that ends the delay
 * (`SHUTDOWN_DELAY_MS`). A worker still starting handles no message yet: it gets SIGTERM. Each worker is
 * asked again the way it was asked first.
 */
export class WorkerStops {
  readonly #listening = new WeakSet<Worker>()
  readonly #way = new WeakMap<Worker, 'message' | 'signal'>()

  listened(worker: Worker): void {
    this.#listening.add(worker)
  }

  ask(worker: Worker, signal: NodeJS.Signals): void {
    const way =
      this.#way.get(worker) ?? (this.#listening.has(worker) && worker.isConnected() ? 'message' : 'signal')
    this.#way.set(worker, way)
    if (way === 'signal') {
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

/** In a worker: calls `stop` each time the supervisor asks it to stop, with the supervisor's signal. */
export function onStopAsked(stop: (signal: NodeJS.Signals) => void): void {
  process.on('message', (message) => {
    if (isStopRequest(message)) stop(message.signal)
  })
}
