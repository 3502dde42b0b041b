import { once } from 'node:events'
import { Worker } from 'node:worker_threads'
import { StoreUnavailableError, WriteInDoubtError } from '../../errors.ts'
import {
  type CreatedPet,
  type CreatePetRequest,
  IdempotencyKeyReusedError,
  PetIdsExhaustedError,
} from '../store.ts'
import type { SqliteConnectionOptions } from './sqlite-connection.ts'
import { type StorageFault, StorageFaultError, storageFaultOf } from './sqlite-errors.ts'
import type { SqliteBatch } from './sqlite-pet-inserts.ts'

/**
 * A create's outcome as it crosses threads: a created or replayed pet, null for a reused key, or
 * `refused` by the batch's fault (sent once with the batch).
 */
type WireOutcome = CreatedPet | null | 'refused'

/** Why a batch failed, as it crosses threads (errors lose their class in a message). */
export interface WireFailure {
  unavailable: boolean
  /** The pets' ids are used up (PetIdsExhaustedError). */
  exhausted?: true
  /** The storage fault behind it, if any (the main thread keeps the store's health). */
  fault?: StorageFault
  message: string
  stack?: string
  /** A fault's cause, SQLite's own words and code: what the fault's log line quotes. */
  cause?: { message: string; errcode?: number }
}

export type WriteThreadReply = { outcomes: WireOutcome[]; refused?: WireFailure } | { failure: WireFailure }
/**
 * A batch, and until when it may wait for the lock (its oldest create's bound, or a stop's if sooner), as a
 * wall-clock time (`performance.timeOrigin` + `now()`): each thread's clock has its own origin, and a time
 * left, sent instead, grew by however long the message waited for a thread still starting.
 */
export type WriteThreadMessage =
  | { requests: CreatePetRequest[]; waitUntil: number }
  | { endWaitsAt: number }
  | { close: true }

export function batchToWire({ outcomes, refusedBy }: SqliteBatch): WriteThreadReply {
  return {
    outcomes: outcomes.map((outcome) => {
      if (outcome instanceof IdempotencyKeyReusedError) return null
      return outcome instanceof StorageFaultError ? 'refused' : outcome
    }),
    ...(refusedBy ? { refused: failureToWire(refusedBy) } : {}),
  }
}

function batchFromWire(outcomes: WireOutcome[], refused: WireFailure | undefined): SqliteBatch {
  const refusedBy = refused && (failureFromWire(refused) as StorageFaultError)
  return {
    outcomes: outcomes.map((outcome) => {
      if (outcome === null) return new IdempotencyKeyReusedError()
      if (outcome !== 'refused') return outcome
      return refusedBy ?? new StorageFaultError('io_error', { cause: new Error('refused, no fault given') })
    }),
    ...(refusedBy ? { refusedBy } : {}),
  }
}

export function failureToWire(error: unknown): WireFailure {
  const { message, stack } = error instanceof Error ? error : new Error(String(error))
  const fault = storageFaultOf(error)
  const wire: WireFailure = { unavailable: error instanceof StoreUnavailableError, message, stack }
  if (error instanceof PetIdsExhaustedError) wire.exhausted = true
  if (fault !== undefined) wire.fault = fault
  const cause =
    error instanceof StorageFaultError ? (error.cause as { message?: unknown; errcode?: unknown }) : undefined
  if (typeof cause?.message === 'string') {
    wire.cause = {
      message: cause.message,
      ...(typeof cause.errcode === 'number' ? { errcode: cause.errcode } : {}),
    }
  }
  return wire
}

function failureFromWire({ unavailable, exhausted, fault, message, stack, cause }: WireFailure): Error {
  if (exhausted) return new PetIdsExhaustedError()
  const error =
    fault !== undefined
      ? new StorageFaultError(fault, { cause: Object.assign(new Error(cause?.message ?? message), cause) })
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
 * Commits batches of creates, one at a time, on a thread with its own connection, so the event loop keeps
 * serving while a commit syncs; each caller is still answered after its commit. Started by the first create,
 * so commands that make none do not pay for it (docs/decisions.md, "Durability").
 */
export class SqliteWriteThread {
  readonly #options: SqliteConnectionOptions
  readonly #entry: URL
  #worker: Worker | undefined
  // Wall-clock time by which every wait for the lock ends (a stop's), if one is set.
  #waitsEndAt = Number.POSITIVE_INFINITY
  // The batch sent, with the thread it was sent to: a dying thread's events settle only its own.
  #pending:
    | { worker: Worker; resolve: (batch: SqliteBatch) => void; reject: (error: Error) => void }
    | undefined

  constructor(
    options: SqliteConnectionOptions,
    entry = new URL('./sqlite-write-thread-main.ts', import.meta.url),
  ) {
    this.#options = { path: options.path, busyTimeoutMs: options.busyTimeoutMs }
    this.#entry = entry
  }

  commit(requests: CreatePetRequest[], waitMs: number): Promise<SqliteBatch> {
    if (this.#pending !== undefined) throw new Error('a batch is already being committed')
    const worker = this.#worker ?? this.#start()
    const waitUntil = Math.min(performance.timeOrigin + performance.now() + waitMs, this.#waitsEndAt)
    return new Promise((resolve, reject) => {
      this.#pending = { worker, resolve, reject }
      worker.postMessage({ requests, waitUntil } satisfies WriteThreadMessage)
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
      const pending = this.#settle(worker)
      if ('failure' in reply) pending?.reject(failureFromWire(reply.failure))
      else pending?.resolve(batchFromWire(reply.outcomes, reply.refused))
    })
    // A thread that dies with a batch may have committed it (out of memory, say, between its COMMIT and
    // its answer): its callers are told the write is in doubt (a 503 naming Idempotency-Key), as a
    // connection lost after a commit was sent is, and the next batch starts a new thread (at once: sent
    // to this one between its error and its exit, it would be lost, and told it may have been made). One
    // that never started (no descriptor left for its event loop) ran nothing: its batch was not written.
    worker.on('error', (error) => {
      if (this.#worker === worker) this.#worker = undefined
      const cause = new StoreUnavailableError('the write thread failed', { cause: error })
      const started = (error as { code?: unknown }).code !== 'ERR_WORKER_INIT_FAILED'
      this.#settle(worker)?.reject(started ? new WriteInDoubtError({ cause }) : cause)
    })
    worker.on('exit', (code) => {
      if (this.#worker === worker) this.#worker = undefined
      const cause = new StoreUnavailableError(`the write thread exited (code ${code})`)
      this.#settle(worker)?.reject(new WriteInDoubtError({ cause }))
    })
    this.#worker = worker
    return worker
  }

  #settle(worker: Worker) {
    const pending = this.#pending
    if (pending?.worker !== worker) return undefined
    this.#pending = undefined
    return pending
  }

  /**
   * Ends the thread's waits for the lock by `moment` (`performance.now()` of this thread): the batch's under
   * way, and every later one's, a thread not started yet included.
   */
  endWaitsBy(moment: number): void {
    this.#waitsEndAt = performance.timeOrigin + moment
    this.#worker?.postMessage({ endWaitsAt: this.#waitsEndAt } satisfies WriteThreadMessage)
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
