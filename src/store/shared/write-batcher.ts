interface Pending<In, Out> {
  item: In
  /** When it was submitted (`performance.now()`). */
  since: number
  resolve: (value: Out) => void
  reject: (error: unknown) => void
}

/** Longest a batch waits for more writes while they keep arriving, by default (milliseconds). */
const DEFAULT_MAX_GATHER_MS = 2

export interface WriteBatcherOptions {
  /** Longest a batch waits for more writes while they keep arriving (milliseconds). */
  maxGatherMs?: number
  /**
   * Whether a batch's failure also fails, at once and with the same error, the writes queued behind it:
   * for failures that say the store cannot work now, where the next batch would only wait out the same
   * timeout. Those writes were never started, so failing them is always safe to retry.
   */
  failsQueued?: (error: unknown) => boolean
  /** What the writes failed with the batch ahead (never started) fail with; by default its own error. */
  queuedFailure?: (error: unknown) => unknown
  /**
   * Whether a batch's failure may be the batch's own and not each write's (more pet ids asked for than are
   * left): its writes are then committed one at a time, in order, each answered by its own.
   */
  splitsOn?: (error: unknown) => boolean
}

/**
 * Group commit: writes submitted while a batch commits go together in the next (at most `maxBatch`, one in
 * flight), gathered while each event-loop turn brings more, for up to `maxGatherMs` (docs/decisions.md,
 * "Durability"). Each caller is answered when its own batch has committed (or failed: see the options), and
 * `commit` is told when the batch's oldest write came, so each write keeps one bound from its arrival.
 */
export class WriteBatcher<In, Out> {
  readonly #commit: (items: In[], since: number) => Out[] | Promise<Out[]>
  readonly #maxBatch: number
  readonly #maxGatherMs: number
  readonly #failsQueued: (error: unknown) => boolean
  readonly #splitsOn: (error: unknown) => boolean
  readonly #queuedFailure: (error: unknown) => unknown
  #queue: Array<Pending<In, Out>> = []
  #draining: Promise<void> | undefined

  /**
   * `commit` stores the items in one transaction and returns one result per item, in order; `since` is
   * when the oldest of them was submitted (`performance.now()`).
   */
  constructor(
    commit: (items: In[], since: number) => Out[] | Promise<Out[]>,
    maxBatch: number,
    options: WriteBatcherOptions = {},
  ) {
    this.#commit = commit
    this.#maxBatch = maxBatch
    this.#maxGatherMs = options.maxGatherMs ?? DEFAULT_MAX_GATHER_MS
    this.#failsQueued = options.failsQueued ?? (() => false)
    this.#splitsOn = options.splitsOn ?? (() => false)
    this.#queuedFailure = options.queuedFailure ?? ((error) => error)
  }

  submit(item: In): Promise<Out> {
    return new Promise((resolve, reject) => {
      this.#queue.push({ item, since: performance.now(), resolve, reject })
      this.#draining ??= this.#gather().then(() => this.#drain())
    })
  }

  /** Resolves at the first turn of the event loop that brought no new write (or when the batch is full). */
  #gather(): Promise<void> {
    const deadline = performance.now() + this.#maxGatherMs
    return new Promise<void>((gathered) => {
      let seen = 0
      const turn = () => {
        const grew = this.#queue.length > seen
        seen = this.#queue.length
        if (grew && seen < this.#maxBatch && performance.now() < deadline) setImmediate(turn)
        else gathered()
      }
      setImmediate(turn)
    })
  }

  async #drain(): Promise<void> {
    try {
      while (this.#queue.length > 0) {
        const batch = this.#queue.splice(0, this.#maxBatch)
        try {
          const since = (batch[0] as Pending<In, Out>).since
          const results = await this.#commit(
            batch.map((pending) => pending.item),
            since,
          )
          for (const [index, pending] of batch.entries()) pending.resolve(results[index] as Out)
        } catch (error) {
          if (batch.length > 1 && this.#splitsOn(error)) {
            await this.#oneByOne(batch)
            continue
          }
          for (const pending of batch) pending.reject(error)
          if (this.#failsQueued(error)) this.#failQueued(this.#queue.splice(0), error)
        }
      }
    } finally {
      this.#draining = undefined
    }
  }

  async #oneByOne(batch: Array<Pending<In, Out>>): Promise<void> {
    for (const [index, pending] of batch.entries()) {
      try {
        const [result] = await this.#commit([pending.item], pending.since)
        pending.resolve(result as Out)
      } catch (error) {
        if (!this.#failsQueued(error)) {
          pending.reject(error)
          continue
        }
        // The store cannot work now: the rest of the batch, and the queue, fail with it at once.
        pending.reject(error)
        this.#failQueued([...batch.slice(index + 1), ...this.#queue.splice(0)], error)
        return
      }
    }
  }

  /** Fails writes never started, after the one ahead of them failed with `error`. */
  #failQueued(writes: Array<Pending<In, Out>>, error: unknown): void {
    const failure = this.#queuedFailure(error)
    for (const pending of writes) pending.reject(failure)
  }

  /** Resolves once every write submitted so far has been committed or has failed. */
  async flush(): Promise<void> {
    while (this.#draining !== undefined) await this.#draining
  }
}

/** A write's own answer from its batch: an error there refused this write alone, and is thrown. */
export async function ownAnswer<Out>(outcome: Promise<Out>): Promise<Exclude<Out, Error>> {
  const answer = await outcome
  if (answer instanceof Error) throw answer
  return answer as Exclude<Out, Error>
}
