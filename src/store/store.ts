import type { NewPet, Pet, PetStatus } from '../schemas/pet.ts'

/** The page of pets a list call asks for; pets come back in ascending id order. */
export interface PetQuery {
  limit: number
  status?: PetStatus
}

/** What a request knows about the API key that authenticated it. */
export interface KeyIdentity {
  id: bigint
  name: string
}

/** An API key as operators see it: never the key itself, only a short hint of it. */
export interface ApiKeyRecord extends KeyIdentity {
  hint: string
  createdAt: string
  revokedAt?: string
}

export interface NewApiKey {
  name: string
  /** SHA-256 of the whole key, hex; the key itself is never stored. */
  hash: string
  hint: string
}

/** Migration versions, in order: those already in the database and those this call applied. */
export interface MigrationReport {
  applied: number[]
  current: number
}

/**
 * The storage port. Routes and commands speak only to this; one engine implements it per folder of
 * `store/`, chosen once at start from `DATABASE_URL`. Engines throw `StoreUnavailableError` when the
 * database cannot do the work now (busy, unreachable), which is answered with 503.
 */
export interface Store {
  readonly engine: string
  migrate(): Promise<MigrationReport>
  /** Resolves only once the pet is durably committed. */
  createPet(pet: NewPet): Promise<Pet>
  getPet(id: bigint): Promise<Pet | undefined>
  listPets(query: PetQuery): Promise<Pet[]>
  /** Rejects with `DuplicateKeyNameError` when an active key has the name. */
  createApiKey(key: NewApiKey): Promise<ApiKeyRecord>
  /**
   * Adds a key given from outside (the `API_KEYS` setting) unless its hash is already known; a key that was
   * revoked stays revoked. Rejects with `DuplicateKeyNameError` when another active key has the name.
   */
  ensureApiKey(key: NewApiKey): Promise<void>
  /** The active (not revoked) key with this hash, if any. */
  findActiveApiKey(hash: string): Promise<KeyIdentity | undefined>
  listApiKeys(): Promise<ApiKeyRecord[]>
  /** Revokes the key with this name; false when no active key has it. */
  revokeApiKey(name: string): Promise<boolean>
  /** Closes the store after pending writes are committed. */
  close(): Promise<void>
}

export class DuplicateKeyNameError extends Error {
  constructor(name: string) {
    super(`an API key named "${name}" already exists`)
    this.name = 'DuplicateKeyNameError'
  }
}
