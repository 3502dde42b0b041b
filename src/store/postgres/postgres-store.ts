import { StoreUnavailableError } from '../../errors.ts'
import type { Pet } from '../../schemas/pet.ts'
import type { CreateOutcome } from '../idempotent-batch.ts'
import type {
  ApiKeyRecord,
  CreatedPet,
  CreatePetRequest,
  DeprecatedCallCount,
  KeyIdentity,
  MigrationReport,
  NewApiKey,
  PetQuery,
  Store,
  StoreHealth,
} from '../store.ts'
import { WriteBatcher } from '../write-batcher.ts'
import { purgeClaims } from './postgres-claim-queries.ts'
import { PostgresDatabase, type PostgresStoreOptions } from './postgres-database.ts'
import * as keys from './postgres-key-queries.ts'
import { migrate, schemaStatus } from './postgres-migrator.ts'
import { createPetBatch } from './postgres-pet-inserts.ts'
import { getPet, listPets } from './postgres-pet-queries.ts'

export type { PostgresStoreOptions } from './postgres-database.ts'

/**
 * PostgreSQL engine for many stateless instances sharing one database. Creates are group-committed like
 * the embedded store's, and each batch takes a transaction-scoped advisory lock before inserting, so ids
 * become visible in ascending order across every instance (see `INSERT_LOCK`). The SQL lives beside this
 * file, one module per job; this class only routes the storage port to it.
 */
export class PostgresStore implements Store {
  readonly engine = 'postgres'
  readonly #database: PostgresDatabase
  readonly #creates: WriteBatcher<CreatePetRequest, CreateOutcome>
  #closing = false

  constructor(options: PostgresStoreOptions & { maxBatch?: number }) {
    this.#database = new PostgresDatabase(options)
    // Each batch is answered within one call bound of its oldest create's arrival, and when it fails as
    // unavailable the creates queued behind it fail with it rather than wait out a second bound.
    this.#creates = new WriteBatcher(
      (batch, since) => createPetBatch(this.#database, batch, since),
      options.maxBatch ?? 500,
      { failsQueued: (error) => error instanceof StoreUnavailableError },
    )
  }

  migrate(): Promise<MigrationReport> {
    return migrate(this.#database)
  }

  schemaStatus(): Promise<{ current: number; latest: number }> {
    return schemaStatus(this.#database)
  }

  /** The server's own faults (a full disk is SQLSTATE 53100) fail each call with 503; none is kept here. */
  health(): Promise<StoreHealth> {
    return Promise.resolve({ writable: true })
  }

  poolStats() {
    return this.#database.stats()
  }

  async createPet(request: CreatePetRequest): Promise<CreatedPet> {
    if (this.#closing) throw new StoreUnavailableError('the store is closed')
    const outcome = await this.#creates.submit(request)
    if (outcome instanceof Error) throw outcome
    return outcome
  }

  getPet(id: bigint): Promise<Pet | undefined> {
    return getPet(this.#database, id)
  }

  listPets(query: PetQuery): Promise<Pet[]> {
    return listPets(this.#database, query)
  }

  purgeIdempotencyKeys(nowMs: number, signal?: AbortSignal): Promise<number> {
    return purgeClaims(this.#database, nowMs, signal)
  }

  serviceSecret(): Promise<string> {
    return keys.serviceSecret(this.#database)
  }

  createApiKey(key: NewApiKey): Promise<ApiKeyRecord> {
    return keys.createApiKey(this.#database, key)
  }

  ensureApiKey(key: NewApiKey): Promise<void> {
    return keys.ensureApiKey(this.#database, key)
  }

  findActiveApiKey(hash: string): Promise<KeyIdentity | undefined> {
    return keys.findActiveApiKey(this.#database, hash)
  }

  listApiKeys(): Promise<ApiKeyRecord[]> {
    return keys.listApiKeys(this.#database)
  }

  revokeApiKey(name: string): Promise<boolean> {
    return keys.revokeApiKey(this.#database, name)
  }

  recordDeprecatedCalls(counts: DeprecatedCallCount[]): Promise<void> {
    return keys.recordDeprecatedCalls(this.#database, counts)
  }

  /**
   * Pending creates commit first, then the pool closes (and later calls fail as unavailable); with a hung
   * server, within the database's close grace. New creates are refused from the start.
   */
  close(): Promise<void> {
    this.#closing = true
    return this.#database.close(this.#creates.flush())
  }
}
