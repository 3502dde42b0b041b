import type { StorageLog } from '../store/store.ts'

/**
 * The store's storage-fault lines during a service's start, held until the start is decided. A fault
 * then ends the start, which says why in one line and what to do (a serving process's line would say it
 * resumes by itself, and it exits instead); once serving, the held lines are logged, in order.
 */
export class HeldFaultLines implements StorageLog {
  readonly #log: StorageLog
  #held: Array<() => void> | undefined = []

  constructor(log: StorageLog) {
    this.#log = log
  }

  error(details: object, message: string): void {
    this.#pass(() => this.#log.error(details, message))
  }

  info(details: object, message: string): void {
    this.#pass(() => this.#log.info(details, message))
  }

  /** Logs the lines held, and every later one as it comes. */
  release(): void {
    const held = this.#held ?? []
    this.#held = undefined
    for (const line of held) line()
  }

  #pass(line: () => void): void {
    if (this.#held === undefined) line()
    else this.#held.push(line)
  }
}
