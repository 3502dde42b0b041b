import { hash } from 'node:crypto'
import { ApiError, serviceUnavailable, WriteInDoubtError } from '../errors.ts'
import { INT64_MAX } from '../schemas/int64.ts'
import type { NewPet } from '../schemas/pet.ts'
import {
  type CreatedPet,
  IdempotencyKeyReusedError,
  idempotencyRecordId,
  PetIdsExhaustedError,
  type Store,
} from '../store/store.ts'

export interface PetCreatorOptions {
  store: Pick<Store, 'createPet'>
  /** How long an idempotency record is kept (`IDEMPOTENCY_RETENTION_S`). */
  retentionMs: number
  now: () => number
  /** Told of every pet actually created (not of replays), for metrics. */
  onCreated: () => void
}

/** What a create asks for, whatever the order of its JSON properties or its white space. */
function fingerprintOf(pet: NewPet): string {
  const canonical = JSON.stringify([pet.name, pet.categoryId.toString(), pet.status ?? null])
  // The one-shot digest: the same bytes as a Hash object's, without making one (docs/decisions.md,
  // "Per-request cost").
  return hash('sha256', canonical, 'base64url')
}

/**
 * Creates pets, idempotently with an Idempotency-Key scoped to the API key: the same pet replays, another is
 * refused (422), one whose first request still runs here is refused (409); the record is committed in the
 * pet's own transaction (docs/decisions.md, "Idempotency-Key").
 */
export function petCreator({ store, retentionMs, now, onCreated }: PetCreatorOptions) {
  const inFlight = new Set<string>()

  async function createIdempotently(
    pet: NewPet,
    apiKeyId: bigint,
    idempotencyKey: string,
  ): Promise<CreatedPet> {
    const id = idempotencyRecordId(apiKeyId, idempotencyKey)
    if (inFlight.has(id)) {
      // The first request ends within milliseconds, or within the store's timeouts (seconds) when it is
      // slow: a retry a second later is replayed, or goes through if the first failed.
      throw new ApiError(
        'idempotency_key_in_flight',
        'a request with this Idempotency-Key is still being processed',
        { 'retry-after': '1' },
      )
    }
    inFlight.add(id)
    try {
      const requestedAtMs = now()
      const fingerprint = fingerprintOf(pet)
      const expiresAtMs = requestedAtMs + retentionMs
      const record = { apiKeyId, idempotencyKey, fingerprint, requestedAtMs, expiresAtMs }
      return await store.createPet({ pet, idempotency: record })
    } catch (error) {
      if (!(error instanceof IdempotencyKeyReusedError)) throw error
      throw new ApiError(
        'idempotency_key_reused',
        'this Idempotency-Key was already used to create a different pet',
      )
    } finally {
      inFlight.delete(id)
    }
  }

  return async function createPet(
    pet: NewPet,
    apiKeyId: bigint,
    idempotencyKey?: string,
  ): Promise<CreatedPet> {
    let created: CreatedPet
    try {
      created =
        idempotencyKey === undefined
          ? await store.createPet({ pet })
          : await createIdempotently(pet, apiKeyId, idempotencyKey)
    } catch (error) {
      if (error instanceof WriteInDoubtError) throw inDoubt(idempotencyKey !== undefined, error)
      // Nothing a retry mends: an operator's matter (README, "Error codes"), not a failure of the service.
      if (!(error instanceof PetIdsExhaustedError)) throw error
      throw new ApiError('pet_ids_exhausted', `every pet id, up to ${INT64_MAX}, has been given out`)
    }
    if (!created.replayed) onCreated()
    return created
  }
}

export type CreatePet = ReturnType<typeof petCreator>

/**
 * A create whose commit the database never confirmed: made or not, only the database knows. A retry with
 * the create's key says which; one without may make a second pet. The store's fault is the cause (logged).
 */
function inDoubt(keyed: boolean, cause: WriteInDoubtError): ApiError {
  const retry = keyed
    ? 'retry with the same Idempotency-Key, which answers with that pet if it was'
    : 'look for it before creating it again (a create sent with an Idempotency-Key can be retried safely)'
  return serviceUnavailable(`${cause.why}, so it may have been made: ${retry}`, { cause })
}
