import { NewerSchemaError } from '../../errors.ts'
import type { Pet } from '../../schemas/pet.ts'
import {
  type ApiKeyRecord,
  type CopyMarks,
  type CreatedPet,
  type CreatePetRequest,
  type DeprecatedCallCount,
  incompatibility,
  type KeyIdentity,
  type MigrateOptions,
  type MigrationReport,
  type NewApiKey,
  type PetQuery,
  type SchemaStatus,
  type Store,
  type StoreHealth,
} from '../store.ts'

/**
 * What an engine's query files provide, each function taking the engine's connection first (the role
 * files of store/README.md). A new engine that lacks one fails the type check.
 */
export interface EngineQueries<Connection> {
  migrate(db: Connection, options?: MigrateOptions): Promise<MigrationReport>
  schemaStatus(db: Connection): Promise<SchemaStatus>
  getPet(db: Connection, id: bigint): Promise<Pet | undefined>
  listPets(db: Connection, query: PetQuery): Promise<Pet[]>
  purgeExpiredIdempotencyRecords(db: Connection, nowMs: number, signal?: AbortSignal): Promise<number>
  serviceSecret(db: Connection): Promise<string>
  copyMarks(db: Connection): Promise<CopyMarks>
  createApiKey(db: Connection, key: NewApiKey): Promise<ApiKeyRecord>
  ensureApiKey(db: Connection, key: NewApiKey): Promise<void>
  apiKeyStored(db: Connection, hash: string): Promise<boolean>
  findActiveApiKeys(db: Connection, hashes: readonly string[]): Promise<(KeyIdentity | undefined)[]>
  listApiKeys(db: Connection): Promise<ApiKeyRecord[]>
  revokeApiKey(db: Connection, name: string): Promise<boolean>
  recordDeprecatedCalls(db: Connection, counts: readonly DeprecatedCallCount[]): Promise<void>
}

/**
 * The storage port routed to an engine's query files. An engine extends it with what is its own: how it
 * commits creates, reports its health and closes, and (`write`) how it guards a write.
 */
export abstract class EngineStore<Connection> implements Store {
  abstract readonly engine: string
  readonly #db: Connection
  readonly #queries: EngineQueries<Connection>
  /** Why this release may not write into the schema, as its last reading found it (`incompatibility`). */
  #newerSchema: string | undefined

  constructor(db: Connection, queries: EngineQueries<Connection>) {
    this.#db = db
    this.#queries = queries
  }

  abstract health(): Promise<StoreHealth>
  abstract createPet(request: CreatePetRequest): Promise<CreatedPet>
  abstract close(after?: Promise<unknown>, doneBy?: number): Promise<void>

  /** Runs a write of a key or of deprecated-call counts; an engine may check its storage around it. */
  protected write<T>(commit: () => Promise<T>): Promise<T> {
    return commit()
  }

  migrate(options?: MigrateOptions): Promise<MigrationReport> {
    return this.#queries.migrate(this.#db, options)
  }

  /** The schema as it stands; one this release may not run on (a newer release migrated) refuses writes. */
  async schemaStatus(): Promise<SchemaStatus> {
    const status = await this.#queries.schemaStatus(this.#db)
    this.#newerSchema = incompatibility(status)
    return status
  }

  /**
   * Throws while the schema needs a newer release, as last read (by a probe, or the app every 5 s): rows
   * this release writes might mean something else to the release that migrated it (docs/versioning.md).
   */
  protected refuseOnNewerSchema(): void {
    if (this.#newerSchema !== undefined) throw new NewerSchemaError(this.#newerSchema)
  }

  /** A write of keys or counts: refused on a newer schema, then as the engine guards it. */
  async #guardedWrite<T>(commit: () => Promise<T>): Promise<T> {
    this.refuseOnNewerSchema()
    return this.write(commit)
  }

  getPet(id: bigint): Promise<Pet | undefined> {
    return this.#queries.getPet(this.#db, id)
  }

  listPets(query: PetQuery): Promise<Pet[]> {
    return this.#queries.listPets(this.#db, query)
  }

  // Not through `write`: a purge that deletes nothing succeeds on a disk that refuses writes, and would
  // tell the engine its writes work again.
  async purgeIdempotencyRecords(nowMs: number, signal?: AbortSignal): Promise<number> {
    this.refuseOnNewerSchema()
    return this.#queries.purgeExpiredIdempotencyRecords(this.#db, nowMs, signal)
  }

  serviceSecret(): Promise<string> {
    return this.#queries.serviceSecret(this.#db)
  }

  copyMarks(): Promise<CopyMarks> {
    return this.#queries.copyMarks(this.#db)
  }

  createApiKey(key: NewApiKey): Promise<ApiKeyRecord> {
    return this.#guardedWrite(() => this.#queries.createApiKey(this.#db, key))
  }

  ensureApiKey(key: NewApiKey): Promise<void> {
    return this.#guardedWrite(() => this.#queries.ensureApiKey(this.#db, key))
  }

  apiKeyStored(hash: string): Promise<boolean> {
    return this.#queries.apiKeyStored(this.#db, hash)
  }

  async findActiveApiKey(hash: string): Promise<KeyIdentity | undefined> {
    const [found] = await this.#queries.findActiveApiKeys(this.#db, [hash])
    return found
  }

  findActiveApiKeys(hashes: readonly string[]): Promise<(KeyIdentity | undefined)[]> {
    return this.#queries.findActiveApiKeys(this.#db, hashes)
  }

  listApiKeys(): Promise<ApiKeyRecord[]> {
    return this.#queries.listApiKeys(this.#db)
  }

  revokeApiKey(name: string): Promise<boolean> {
    return this.#guardedWrite(() => this.#queries.revokeApiKey(this.#db, name))
  }

  recordDeprecatedCalls(counts: DeprecatedCallCount[]): Promise<void> {
    return this.#guardedWrite(() => this.#queries.recordDeprecatedCalls(this.#db, counts))
  }
}
