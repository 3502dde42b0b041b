import cluster, { type Worker } from 'node:cluster'

/** The supervisor's question to a worker, and the worker's answer: the same message sent back. */
interface LivenessCheck {
  type: 'petstore:liveness'
}

const CHECK: LivenessCheck = { type: 'petstore:liveness' }

function isLivenessCheck(message: unknown): message is LivenessCheck {
  return (message as LivenessCheck | null)?.type === 'petstore:liveness'
}

// A worker is asked at least this often; a shorter timeout is checked four times within it.
const MOST_CHECK_INTERVAL_MS = 1000

/**
 * Makes this cluster worker answer its supervisor's liveness checks. The answer comes from the event loop,
 * so a worker whose loop is stuck (or whose process is stopped) leaves them unanswered.
 */
export function answerLivenessChecks(): void {
  process.on('message', (message) => {
    // With a callback, a channel closing meanwhile is no error event.
    if (isLivenessCheck(message) && process.connected) process.send?.(CHECK, undefined, {}, () => {})
  })
}

/**
 * The supervisor's watch over its listening workers: each is asked regularly, and one that has not answered
 * for `timeoutMs` is handed to `onUnresponsive` (once) and watched no more. Without it, the cluster would go
 * on handing connections to a worker that never answers them.
 */
export class LivenessWatch {
  readonly #timeoutMs: number
  readonly #intervalMs: number
  readonly #onUnresponsive: (worker: Worker, silentMs: number) => void
  readonly #lastAnswer = new Map<Worker, number>()
  readonly #timer: NodeJS.Timeout
  #lastCheck = performance.now()

  constructor(timeoutMs: number, onUnresponsive: (worker: Worker, silentMs: number) => void) {
    this.#timeoutMs = timeoutMs
    this.#intervalMs = Math.min(MOST_CHECK_INTERVAL_MS, timeoutMs / 4)
    this.#onUnresponsive = onUnresponsive
    cluster.on('message', (worker, message) => {
      if (isLivenessCheck(message) && this.#lastAnswer.has(worker)) {
        this.#lastAnswer.set(worker, performance.now())
      }
    })
    this.#timer = setInterval(() => this.#check(), this.#intervalMs).unref()
  }

  /** Watches `worker` from now on (once it listens) until it exits. */
  watch(worker: Worker): void {
    this.#lastAnswer.set(worker, performance.now())
    worker.once('exit', () => this.#lastAnswer.delete(worker))
  }

  /** Watches no worker any more (the service is stopping: the drain has its own bound). */
  stop(): void {
    clearInterval(this.#timer)
    this.#lastAnswer.clear()
  }

  #check(): void {
    const now = performance.now()
    // A supervisor that did not run for a while (stopped, starved of CPU, its host suspended) has not read
    // the answers meanwhile: it cannot tell its workers' silence from its own, which counts from now.
    const away = now - this.#lastCheck > 2 * this.#intervalMs
    this.#lastCheck = now
    for (const [worker, answered] of this.#lastAnswer) {
      if (away) {
        this.#lastAnswer.set(worker, now)
      } else if (now - answered >= this.#timeoutMs) {
        this.#lastAnswer.delete(worker)
        this.#onUnresponsive(worker, Math.round(now - answered))
        continue
      }
      worker.send(CHECK, undefined, () => {})
    }
  }
}
