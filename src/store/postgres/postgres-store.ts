import { StoreUnavailableError, WriteInDoubtError } from '../../errors.ts'
import { EngineStore } from '../shared/engine-store.ts'
import { ownAnswer, WriteBatcher } from '../shared/write-batcher.ts'
import {
  type CreatedPet,
  type CreatePetRequest,
  PetIdsExhaustedError,
  type SchemaStatus,
  type StoreHealth,
} from '../store.ts'
import { PostgresPool } from './postgres-connection.ts'
import { refusedWrites } from './postgres-errors.ts'
import { postgresHealth } from './postgres-health.ts'
import * as idempotency from './postgres-idempotency-queries.ts'
import * as keys from './postgres-key-queries.ts'
import * as migrator from './postgres-migrator.ts'
import { createPetBatch, type PostgresCreateOutcome } from './postgres-pet-inserts.ts'
import * as pets from './postgres-pet-queries.ts'
import type { PostgresStoreOptions } from './postgres-pool-config.ts'
import * as settings from './postgres-settings-queries.ts'

export type { PostgresStoreOptions } from './postgres-pool-config.ts'

/**
 * PostgreSQL engine for many stateless instances sharing one database: creates group-committed as the
 * embedded store's, each batch under a transaction-scoped advisory lock so ids become visible in ascending
 * order on every instance (`INSERT_LOCK`; docs/decisions.md, "Gap-free order on PostgreSQL").
 */
export class PostgresStore extends EngineStore<PostgresPool> {
  readonly engine = 'postgres'
  readonly #pool: PostgresPool
  readonly #creates: WriteBatcher<CreatePetRequest, PostgresCreateOutcome>
  #closing = false
  /** The schema status last read: readiness's answer while every connection is busy. */
  #schema: SchemaStatus | undefined

  constructor(options: PostgresStoreOptions & { maxBatch?: number }) {
    const pool = new PostgresPool(options)
    super(pool, { ...migrator, ...pets, ...idempotency, ...settings, ...keys })
    this.#pool = pool
    // Each batch is answered within one call bound of its oldest create's arrival, and when it fails as
    // unavailable the creates queued behind it fail with it rather than wait out a second bound.
    this.#creates = new WriteBatcher(
      (batch, since) => createPetBatch(pool, batch, since),
      options.maxBatch ?? 500,
      {
        // A database that refuses writes (read-only, disk full) answers at once: the writes queued behind
        // are still tried, as their retries may be answered from what is stored.
        failsQueued: (error) => error instanceof StoreUnavailableError && !refusedWrites(error),
        // Those were never sent: whatever became of the batch ahead, they were not made.
        queuedFailure: (error) =>
          error instanceof WriteInDoubtError
            ? new StoreUnavailableError('the database was lost during the batch ahead', { cause: error })
            : error,
        // The ids left may do for some of the batch's creates, or none: each then gets its own answer.
        splitsOn: (error) => error instanceof PetIdsExhaustedError,
      },
    )
  }

  health(): Promise<StoreHealth> {
    return postgresHealth()
  }

  /**
   * Read from the database, unless every connection is busy with a server that answers (slow statements, a
   * lock): a probe queued behind them would take every instance out of rotation at once (docs/decisions.md,
   * "A busy pool is not an unreachable database"). The last status read stands for it then.
   */
  override async schemaStatus(): Promise<SchemaStatus> {
    if (this.#schema !== undefined && this.#pool.busyWithAnsweringServer()) return this.#schema
    this.#schema = await super.schemaStatus()
    return this.#schema
  }

  poolStats() {
    return this.#pool.stats()
  }

  async createPet(request: CreatePetRequest): Promise<CreatedPet> {
    if (this.#closing) throw new StoreUnavailableError('the store is closed')
    this.refuseOnNewerSchema()
    return ownAnswer(this.#creates.submit(request))
  }

  /**
   * Pending creates commit and `after` settles first, then the pool closes (and later calls fail as
   * unavailable); with a hung server, by `doneBy` (see the pool's `close`). New creates are refused from
   * the start.
   */
  close(after: Promise<unknown> = Promise.resolve(), doneBy?: number): Promise<void> {
    this.#closing = true
    return this.#pool.close(Promise.allSettled([after, this.#creates.flush()]), doneBy)
  }
}
