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
 * How long each watched worker has left the checks unanswered, counted only while the supervisor runs (at
 * most two intervals per count), so a paused supervisor does not take its own silence for its workers'
 * (docs/decisions.md, "A worker that stops answering is replaced").
 */
export class Silences<W> {
  readonly #timeoutMs: number
  readonly #mostPerCountMs: number
  readonly #silent = new Map<W, { ms: number; since: number }>()

  constructor(timeoutMs: number, intervalMs: number) {
    this.#timeoutMs = timeoutMs
    this.#mostPerCountMs = 2 * intervalMs
  }

  /** Starts counting `worker`'s silence from `now`. */
  watch(worker: W, now: number): void {
    this.#silent.set(worker, { ms: 0, since: now })
  }

  forget(worker: W): void {
    this.#silent.delete(worker)
  }

  /** An answer from `worker` at `now`: its silence starts over. */
  answered(worker: W, now: number): void {
    const silence = this.#silent.get(worker)
    if (silence) Object.assign(silence, { ms: 0, since: now })
  }

  /** Counts up to `now`; returns the workers silent for the timeout, each with its silence, forgotten. */
  count(now: number): Array<{ worker: W; silentMs: number }> {
    const unresponsive = []
    for (const [worker, silence] of this.#silent) {
      silence.ms += Math.min(now - silence.since, this.#mostPerCountMs)
      silence.since = now
      if (silence.ms < this.#timeoutMs) continue
      this.#silent.delete(worker)
      unresponsive.push({ worker, silentMs: Math.round(silence.ms) })
    }
    return unresponsive
  }

  /** Watches none any more. */
  clear(): void {
    this.#silent.clear()
  }

  /** The workers still watched. */
  watched(): IterableIterator<W> {
    return this.#silent.keys()
  }
}

/**
 * Asks each listening worker regularly, and hands one silent for `timeoutMs` (as `Silences` counts it) to
 * `onUnresponsive`, once: a stuck worker's connections wait for ever (docs/decisions.md, "A worker that stops
 * answering is replaced").
 */
export class LivenessWatch {
  readonly #silences: Silences<Worker>
  readonly #onUnresponsive: (worker: Worker, silentMs: number) => void
  readonly #timer: NodeJS.Timeout

  constructor(timeoutMs: number, onUnresponsive: (worker: Worker, silentMs: number) => void) {
    const intervalMs = Math.min(MOST_CHECK_INTERVAL_MS, timeoutMs / 4)
    this.#silences = new Silences(timeoutMs, intervalMs)
    this.#onUnresponsive = onUnresponsive
    cluster.on('message', (worker, message) => {
      if (isLivenessCheck(message)) this.#silences.answered(worker, performance.now())
    })
    this.#timer = setInterval(() => this.#check(), intervalMs).unref()
  }

  /** Watches `worker` from now on (once it listens) until it exits. */
  watch(worker: Worker): void {
    this.#silences.watch(worker, performance.now())
    worker.once('exit', () => this.#silences.forget(worker))
  }

  /** Watches no worker any more (the service is stopping: the drain has its own bound). */
  stop(): void {
    clearInterval(this.#timer)
    this.#silences.clear()
  }

  #check(): void {
    for (const { worker, silentMs } of this.#silences.count(performance.now())) {
      this.#onUnresponsive(worker, silentMs)
    }
    for (const worker of this.#silences.watched()) worker.send(CHECK, undefined, () => {})
  }
}
