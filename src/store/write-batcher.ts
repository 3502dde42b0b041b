interface Pending<In, Out> {
  item: In
  resolve: (value: Out) => void
  reject: (error: unknown) => void
}

/**
 * Group commit: writes submitted while a batch is being committed wait and go together in the next one,
 * so N concurrent writes cost one transaction and one sync instead of N. At most one batch is in flight;
 * a batch holds at most `maxBatch` writes; each caller is answered only when its own batch has committed,
 * and a failed batch fails only its own callers.
 */
export class WriteBatcher<In, Out> {
  readonly #commit: (items: In[]) => Out[] | Promise<Out[]>
  readonly #maxBatch: number
  #queue: Array<Pending<In, Out>> = []
  #draining: Promise<void> | undefined

  /** `commit` stores the items in one transaction and returns one result per item, in order. */
  constructor(commit: (items: In[]) => Out[] | Promise<Out[]>, maxBatch: number) {
    this.#commit = commit
    this.#maxBatch = maxBatch
  }

  submit(item: In): Promise<Out> {
    return new Promise((resolve, reject) => {
      this.#queue.push({ item, resolve, reject })
      // Waiting for the next turn of the event loop lets the writes of concurrent requests gather.
      this.#draining ??= new Promise<void>((started) => setImmediate(started)).then(() => this.#drain())
    })
  }

  async #drain(): Promise<void> {
    try {
      while (this.#queue.length > 0) {
        const batch = this.#queue.splice(0, this.#maxBatch)
        try {
          const results = await this.#commit(batch.map((pending) => pending.item))
          for (const [index, pending] of batch.entries()) pending.resolve(results[index] as Out)
        } catch (error) {
          for (const pending of batch) pending.reject(error)
        }
      }
    } finally {
      this.#draining = undefined
    }
  }

  /** Resolves once every write submitted so far has been committed or has failed. */
  async flush(): Promise<void> {
    while (this.#draining !== undefined) await this.#draining
  }
}
