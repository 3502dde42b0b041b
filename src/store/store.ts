import type { NewPet, Pet, PetStatus } from '../schemas/pet.ts'

/** Where an engine reports storage faults: the process logger (pino's `(details, message)` form). */
export interface StorageLog {
  error(details: object, message: string): void
  info(details: object, message: string): void
}

/** A page of pets: ascending id order, only ids above `afterId` (keyset paging) and with `status`. */
export interface PetQuery {
  limit: number
  status?: PetStatus
  afterId?: bigint
}

/** What a request knows about the API key that authenticated it. */
export interface KeyIdentity {
  readonly id: bigint
  readonly name: string
}

/** An API key as operators see it: never the key itself, only a short hint of it. */
export interface ApiKeyRecord extends KeyIdentity {
  hint: string
  createdAt: string
  revokedAt?: string
  /** Calls of deprecated operations made with this key (recorded every few seconds). */
  deprecatedCalls: number
  lastDeprecatedCallAt?: string
}

export interface NewApiKey {
  name: string
  /** SHA-256 of the whole key, hex; the key itself is never stored. */
  hash: string
  hint: string
}

/**
 * What the store keeps of an idempotent create, written with its pet: while it is kept, the same
 * Idempotency-Key (per API key) never creates a second pet.
 */
export interface IdempotencyRecord {
  apiKeyId: bigint
  /** The Idempotency-Key header's value. */
  idempotencyKey: string
  /** A digest of what was asked for; the same key with another fingerprint is refused. */
  fingerprint: string
  /** When the request came (epoch milliseconds): an earlier record expired by then counts as none. */
  requestedAtMs: number
  /** Epoch milliseconds after which the record is forgotten. */
  expiresAtMs: number
}

/** The identity of an idempotency record: an Idempotency-Key is scoped to the API key that sent it. */
export function idempotencyRecordId(apiKeyId: bigint, idempotencyKey: string): string {
  return `${apiKeyId}:${idempotencyKey}`
}

export interface CreatePetRequest {
  pet: NewPet
  idempotency?: IdempotencyRecord
}

/** A create's result: the pet, and whether it was created earlier under the same idempotency key. */
export interface CreatedPet {
  pet: Pet
  replayed: boolean
}

/** Deprecated-operation calls counted in memory, added to a key's totals. */
export interface DeprecatedCallCount {
  apiKeyId: bigint
  calls: number
  /** Epoch milliseconds of the latest call. */
  lastCallAtMs: number
}

/**
 * Whether the store can take writes now. Not writable while a storage fault lasts (a full disk, a read-only
 * file system, the database file removed from under the service); `reason` is safe to show to anyone.
 */
export type StoreHealth = { writable: true } | { writable: false; reason: string }

/**
 * Where a database's schema stands for this release: its version, the one this release needs, and the
 * oldest release schema its migrations keep working (a release runs on it only if `latest` is at least that).
 */
export interface SchemaStatus {
  current: number
  latest: number
  compatibleFrom: number
}

/** Why this release may not run on a database of `status` (its migrations need a newer one), if so. */
export function incompatibility({ current, latest, compatibleFrom }: SchemaStatus): string | undefined {
  if (compatibleFrom <= latest) return undefined
  return `database schema version ${current} is newer than this release knows (${latest}) and needs a release made for schema ${compatibleFrom} or later`
}

/** What a migration run applied, and where the schema then stands (`SchemaStatus`). */
export interface MigrationReport extends SchemaStatus {
  applied: number[]
  /** Where the schema was made, when this run made it where no table was (`database d, schema s`, a path). */
  made?: string
  /** Set when `schema_migrations` gained its `compatible_from` column (a database of release 1.0.0). */
  floorsColumnAdded?: true
}

export interface MigrateOptions {
  /**
   * Whether a database (or PostgreSQL schema) holding no table at all is given the service's schema (the
   * default) or refused with `NoSchemaError`, left as it is: a command that only reads or revokes keys run
   * on a new, wrong database.
   */
  makeSchema?: boolean
  /**
   * Told when another process holds the migrations and this one waits for them, at most `boundMs`
   * (PostgreSQL's migration lock; SQLite's lock is waited for within its busy timeout, said by no one).
   */
  onWaiting?: (boundMs: number) => void
}

/** The database holds no table at all, and the migration was told not to make the schema there. */
export class NoSchemaError extends Error {
  /** `database d, schema s`, or a file's path. */
  readonly where: string

  constructor(where: string) {
    super(`no Pet Store tables in ${where}`)
    this.name = 'NoSchemaError'
    this.where = where
  }
}

/** What an engine that pools connections reports about them. */
export interface PoolStats {
  total: number
  idle: number
  waiting: number
}

/** What `petstore copy` leaves on its target (ISO 8601 times), read by a service that serves it. */
export interface CopyMarks {
  /** When a copy into the store started, while it has not finished. */
  unfinishedSince: string | undefined
  /** When the last copy into the store finished. */
  lastFinishedAt: string | undefined
}

/**
 * The storage port. Routes and commands speak only to this; one engine implements it per folder of
 * `store/`, chosen once at start from `DATABASE_URL`. Engines throw `StoreUnavailableError` when the
 * database cannot do the work now (busy, unreachable), which is answered with 503.
 */
export interface Store {
  readonly engine: string
  migrate(options?: MigrateOptions): Promise<MigrationReport>
  /** The schema version in the database, the one this release expects, and its floor (readiness). */
  schemaStatus(): Promise<SchemaStatus>
  /**
   * Readiness beyond reachability: engines that watch their own storage report a fault here until a write
   * (or a probe write made by this call) succeeds again. Rejects like any call when the store is unreachable.
   */
  health(): Promise<StoreHealth>
  /** Connection counts, for engines that pool connections. */
  poolStats?(): PoolStats
  /**
   * Resolves only once the pet (and its idempotency record, in the same transaction) is durably
   * committed. Rejects with `IdempotencyKeyReusedError` when the key was used for a different pet.
   */
  createPet(request: CreatePetRequest): Promise<CreatedPet>
  getPet(id: bigint): Promise<Pet | undefined>
  listPets(query: PetQuery): Promise<Pet[]>
  /**
   * Deletes idempotency records that expired by `nowMs`, in small chunks (see `purgeInChunks`), and
   * resolves to how many. When `signal` aborts it stops after the chunk in progress.
   */
  purgeIdempotencyRecords(nowMs: number, signal?: AbortSignal): Promise<number>
  /** A random secret created once per database and shared by every instance (signs paging cursors). */
  serviceSecret(): Promise<string>
  /** The marks `petstore copy` leaves on this store: a copy under way, the last one finished. */
  copyMarks(): Promise<CopyMarks>
  /** Rejects with `DuplicateKeyNameError` when an active key has the name. */
  createApiKey(key: NewApiKey): Promise<ApiKeyRecord>
  /**
   * Adds a key given from outside (the `API_KEYS` setting) unless its hash is already known; a key that was
   * revoked stays revoked. Rejects with `DuplicateKeyNameError` when another active key has the name.
   */
  ensureApiKey(key: NewApiKey): Promise<void>
  /** Whether a key with this hash was ever stored, revoked or not. */
  apiKeyStored(hash: string): Promise<boolean>
  /** The active (not revoked) key with this hash, if any. */
  findActiveApiKey(hash: string): Promise<KeyIdentity | undefined>
  /** The active keys with these hashes, in their order (undefined where none is): one query for them all. */
  findActiveApiKeys(hashes: readonly string[]): Promise<(KeyIdentity | undefined)[]>
  listApiKeys(): Promise<ApiKeyRecord[]>
  /** Revokes the key with this name; false when no active key has it. */
  revokeApiKey(name: string): Promise<boolean>
  recordDeprecatedCalls(counts: DeprecatedCallCount[]): Promise<void>
  /**
   * Closes the store once pending writes are committed and `after` has settled; an engine whose database can
   * hang waits until a grace before `doneBy` (a `performance.now()` moment; none: the grace starts at once),
   * then fails what still waits (docs/decisions.md, "The app's last writes get what is left of the bound").
   */
  close(after?: Promise<unknown>, doneBy?: number): Promise<void>
}

export class DuplicateKeyNameError extends Error {
  constructor(name: string) {
    super(`an API key named "${name}" already exists`)
    this.name = 'DuplicateKeyNameError'
  }
}

/** The pets' ids are used up: the largest int64 has been given out, and ids are never given twice. */
export class PetIdsExhaustedError extends Error {
  constructor(options?: ErrorOptions) {
    super('every pet id has been given out (the largest int64 included)', options)
    this.name = 'PetIdsExhaustedError'
  }
}

export class IdempotencyKeyReusedError extends Error {
  constructor() {
    super('the idempotency key was already used for a different request')
    this.name = 'IdempotencyKeyReusedError'
  }
}
