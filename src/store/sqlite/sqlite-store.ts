import { WriteInDoubtError } from '../../errors.ts'
import { EngineStore } from '../shared/engine-store.ts'
import { ownAnswer, WriteBatcher } from '../shared/write-batcher.ts'
import {
  type CreatedPet,
  type CreatePetRequest,
  PetIdsExhaustedError,
  type StorageLog,
  type StoreHealth,
} from '../store.ts'
import { SqliteConnection, type SqliteConnectionOptions } from './sqlite-connection.ts'
import { SqliteHealth } from './sqlite-health.ts'
import * as idempotency from './sqlite-idempotency-queries.ts'
import * as keys from './sqlite-key-queries.ts'
import * as migrator from './sqlite-migrator.ts'
import { createPetBatch, type SqliteBatch, type SqliteCreateOutcome } from './sqlite-pet-inserts.ts'
import * as pets from './sqlite-pet-queries.ts'
import * as settings from './sqlite-settings-queries.ts'
import { SqliteWriteThread } from './sqlite-write-thread.ts'

export interface SqliteStoreOptions extends SqliteConnectionOptions {
  /** Most creates committed in one transaction (group commit). */
  maxBatch?: number
  /**
   * Commit creates on a thread of their own (a file only) rather than on the calling thread (the default,
   * and always for `:memory:`, whose data no other connection can see).
   */
  writeThread?: boolean
  /** The write thread's entry module (tests replace it to make the thread fail). */
  writeThreadEntry?: URL
  /** Where storage faults are reported, once each (by default nowhere). */
  log?: StorageLog
}

// Kept of a stop's bound for what follows the last writes: the batches' flush and the files' close.
const CLOSE_GRACE_MS = 250

const SILENT: StorageLog = { error: () => {}, info: () => {} }

/**
 * The embedded store, one SQLite file (SqliteConnection). Creates that arrive together share one transaction
 * and one fsync, optionally on a write thread (SqliteWriteThread); each 201 follows its commit and a check
 * that the files are still the ones opened (SqliteHealth; docs/decisions.md, "Durability").
 */
export class SqliteStore extends EngineStore<SqliteConnection> {
  readonly engine = 'sqlite'
  readonly #db: SqliteConnection
  readonly #health: SqliteHealth
  readonly #creates: WriteBatcher<CreatePetRequest, SqliteCreateOutcome>
  readonly #writeThread: SqliteWriteThread | undefined

  constructor(options: SqliteStoreOptions) {
    // Faults are reported by operations, so only once both exist.
    const db: SqliteConnection = new SqliteConnection(options, (fault) => health.noteFailure(fault))
    const health = new SqliteHealth(db, options.path, options.log ?? SILENT)
    super(db, { ...migrator, ...pets, ...idempotency, ...settings, ...keys })
    this.#db = db
    this.#health = health
    const onThread = options.path !== ':memory:' && (options.writeThread ?? false)
    const writeThread = onThread ? new SqliteWriteThread(options, options.writeThreadEntry) : undefined
    this.#writeThread = writeThread
    // A create's wait for the lock counts from its arrival: queued behind a batch that waited, it has less.
    const waitLeft = (since: number) => db.waitAllowed(options.busyTimeoutMs - (performance.now() - since))
    const commit = writeThread
      ? (batch: CreatePetRequest[], since: number) => writeThread.commit(batch, waitLeft(since))
      : (batch: CreatePetRequest[], since: number) => db.run(() => createPetBatch(db, batch), waitLeft(since))
    this.#creates = new WriteBatcher(
      async (batch, since) => (await this.write(() => commit(batch, since), verdictOfBatch)).outcomes,
      options.maxBatch ?? 500,
      // The ids left may do for some of the batch's creates, or none: each then gets its own answer.
      { splitsOn: (error) => error instanceof PetIdsExhaustedError },
    )
  }

  /**
   * A write (creates, keys, deprecated-call counts), refused while a database file is not the one opened,
   * and checked again once committed: what went into a file no longer at its path would be lost by a
   * restart, so it is never acknowledged (refused counts stay with the counter for a later flush).
   */
  protected override async write<T>(
    commit: () => Promise<T>,
    verdictOf?: (result: T) => WriteVerdict,
  ): Promise<T> {
    try {
      this.#health.assertUndamaged()
      this.#health.assertFilesInPlace()
      const result = await commit()
      const verdict = verdictOf?.(result) ?? WROTE
      try {
        this.#health.assertFilesInPlace()
      } catch (fault) {
        // Creates committed into the file its path no longer names: there if it is put back, lost if not.
        if (verdictOf === undefined || !('wrote' in verdict && verdict.wrote)) throw fault
        this.#health.noteFailure(fault)
        throw new WriteInDoubtError({ cause: fault, fileMoved: true })
      }
      if ('refusedBy' in verdict) this.#health.noteFailure(verdict.refusedBy)
      else if (verdict.wrote) this.#health.noteWriteSucceeded()
      return result
    } catch (error) {
      this.#health.noteFailure(error)
      throw error
    }
  }

  async health(): Promise<StoreHealth> {
    this.#db.ensureOpen()
    return this.#health.health()
  }

  async createPet(request: CreatePetRequest): Promise<CreatedPet> {
    this.#db.ensureOpen()
    this.refuseOnNewerSchema()
    return ownAnswer(this.#creates.submit(request))
  }

  async close(after?: Promise<unknown>, doneBy?: number): Promise<void> {
    // Another process may hold the lock past the stop's bound: the last writes give up before it.
    if (doneBy !== undefined) {
      this.#db.endWaitsBy(doneBy - CLOSE_GRACE_MS)
      this.#writeThread?.endWaitsBy(doneBy - CLOSE_GRACE_MS)
    }
    await after?.catch(() => {})
    if (this.#db.closed) return
    await this.#creates.flush()
    await this.#writeThread?.close()
    if (this.#health.leaveLog()) this.#db.abandon()
    else {
      this.#db.close()
      this.#health.close()
    }
  }

  // Not through `write` (engine-store.ts says why), but never into files that are no longer the ones opened.
  override async purgeIdempotencyRecords(nowMs: number, signal?: AbortSignal): Promise<number> {
    this.#health.assertFilesInPlace()
    return super.purgeIdempotencyRecords(nowMs, signal)
  }
}

/**
 * What a committed batch tells of the volume: the fault that refused its writes (its replays were
 * answered from what could be read), or whether it wrote at all (replays alone write nothing: they tell
 * nothing of whether writes work again).
 */
type WriteVerdict = { refusedBy: Error } | { wrote: boolean }

const WROTE: WriteVerdict = { wrote: true }

function verdictOfBatch({ outcomes, refusedBy }: SqliteBatch): WriteVerdict {
  if (refusedBy !== undefined) return { refusedBy }
  return { wrote: outcomes.some((outcome) => !(outcome instanceof Error) && !outcome.replayed) }
}
