import { once } from 'node:events'
import { Worker } from 'node:worker_threads'
import { StoreUnavailableError } from '../../errors.ts'
import { type CreatedPet, type CreatePetRequest, IdempotencyKeyReusedError } from '../store.ts'
import type { SqliteConnectionOptions } from './sqlite-connection.ts'
import { type StorageFault, StorageFaultError, storageFaultOf } from './sqlite-errors.ts'
import type { SqliteCreateOutcome } from './sqlite-pet-inserts.ts'

/**
 * A batch's outcomes as they cross threads: a created or replayed pet, null for a reused key, or the
 * fault that refused a create the volume could not write.
 */
export type WireOutcome = CreatedPet | null | { refused: WireFailure }

/** Why a batch failed, as it crosses threads (errors lose their class in a message). */
export interface WireFailure {
  unavailable: boolean
  /** The storage fault behind it, if any (the main thread keeps the store's health). */
  fault?: StorageFault
  message: string
  stack?: string
}

export type WriteThreadReply = { outcomes: WireOutcome[] } | { failure: WireFailure }
export type WriteThreadMessage = { requests: CreatePetRequest[] } | { close: true }

export function toWire(outcome: SqliteCreateOutcome): WireOutcome {
  if (outcome instanceof IdempotencyKeyReusedError) return null
  return outcome instanceof StorageFaultError ? { refused: failureToWire(outcome) } : outcome
}

function outcomeFromWire(outcome: WireOutcome): SqliteCreateOutcome {
  if (outcome === null) return new IdempotencyKeyReusedError()
  return 'refused' in outcome ? (failureFromWire(outcome.refused) as StorageFaultError) : outcome
}

export function failureToWire(error: unknown): WireFailure {
  const { message, stack } = error instanceof Error ? error : new Error(String(error))
  const fault = storageFaultOf(error)
  return { unavailable: error instanceof StoreUnavailableError, ...(fault ? { fault } : {}), message, stack }
}

function failureFromWire({ unavailable, fault, message, stack }: WireFailure): Error {
  const error =
    fault !== undefined
      ? new StorageFaultError(fault, { cause: new Error(message) })
      : unavailable
        ? new StoreUnavailableError(message)
        : new Error(message)
  if (stack !== undefined) error.stack = stack
  return error
}

// The thread only runs transactions on batches of small objects; a small young generation keeps its
// memory near what it uses.
const THREAD_LIMITS = { maxYoungGenerationSizeMb: 2, maxOldGenerationSizeMb: 64 }
const CLOSE_TIMEOUT_MS = 5_000

/**
 * Commits batches of creates on a thread with its own connection to the database file. node:sqlite is
 * synchronous, so a commit on the main thread would hold every request while the disk syncs; here the
 * event loop keeps serving during the sync, and each caller is still answered only after its commit
 * returned. One batch at a time (the WriteBatcher sends the next once this one is answered). The thread
 * starts with the first create, so commands that never create pets do not pay for it.
 */
export class SqliteWriteThread {
  readonly #options: SqliteConnectionOptions
  readonly #entry: URL
  #worker: Worker | undefined
  #pending: { resolve: (outcomes: SqliteCreateOutcome[]) => void; reject: (error: Error) => void } | undefined

  constructor(
    options: SqliteConnectionOptions,
    entry = new URL('./sqlite-write-thread-main.ts', import.meta.url),
  ) {
    this.#options = { path: options.path, busyTimeoutMs: options.busyTimeoutMs }
    this.#entry = entry
  }

  commit(requests: CreatePetRequest[]): Promise<SqliteCreateOutcome[]> {
    if (this.#pending !== undefined) throw new Error('a batch is already being committed')
    const worker = this.#worker ?? this.#start()
    return new Promise((resolve, reject) => {
      this.#pending = { resolve, reject }
      worker.postMessage({ requests } satisfies WriteThreadMessage)
    })
  }

  #start(): Worker {
    const worker = new Worker(this.#entry, {
      workerData: this.#options,
      resourceLimits: THREAD_LIMITS,
      stdout: false,
      stderr: false,
    })
    worker.on('message', (reply: WriteThreadReply) => {
      const pending = this.#settle()
      if ('failure' in reply) pending?.reject(failureFromWire(reply.failure))
      else pending?.resolve(reply.outcomes.map(outcomeFromWire))
    })
    // A thread that dies takes its batch with it: the transaction was not committed (SQLite rolls back
    // what it never saw COMMIT for), so its callers get a 503, and the next batch starts a new thread.
    worker.on('error', (error) => {
      this.#settle()?.reject(new StoreUnavailableError('the write thread failed', { cause: error }))
    })
    worker.on('exit', (code) => {
      if (this.#worker === worker) this.#worker = undefined
      this.#settle()?.reject(new StoreUnavailableError(`the write thread exited (code ${code})`))
    })
    this.#worker = worker
    return worker
  }

  #settle() {
    const pending = this.#pending
    this.#pending = undefined
    return pending
  }

  /** Ends the thread once its connection is closed (call after the last batch was answered). */
  async close(): Promise<void> {
    const worker = this.#worker
    if (worker === undefined) return
    this.#worker = undefined
    const exited = once(worker, 'exit')
    worker.postMessage({ close: true } satisfies WriteThreadMessage)
    const timer = setTimeout(() => void worker.terminate(), CLOSE_TIMEOUT_MS)
    try {
      await exited
    } finally {
      clearTimeout(timer)
    }
  }
}
