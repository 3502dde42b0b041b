import type { Pet } from '../../schemas/pet.ts'
import {
  type CreatedPet,
  type CreatePetRequest,
  IdempotencyKeyReusedError,
  type IdempotencyRecord,
  idempotencyRecordId,
} from '../store.ts'

/** An idempotency record as stored: which pet its key created, for which request, until when. */
export interface StoredIdempotencyRecord {
  fingerprint: string
  petId: bigint
  expiresAtMs: number
}

/** What one create of a batch does, decided before anything is written. */
export type CreatePlan =
  | { kind: 'insert' }
  | { kind: 'replay'; petId: bigint }
  | { kind: 'same-batch'; index: number }
  | { kind: 'reused' }

export type CreateOutcome = CreatedPet | IdempotencyKeyReusedError

/**
 * Decides which creates of a batch insert a pet and which replay one, from `stored` (the keys' records, read
 * under the batch's write lock): same fingerprint replays, another is refused, an expired record is none;
 * two creates of one batch with one key behave as if one came after the other.
 */
export function planCreates(
  requests: readonly CreatePetRequest[],
  stored: ReadonlyMap<string, StoredIdempotencyRecord>,
): CreatePlan[] {
  const earlier = new Map<string, { index: number; fingerprint: string }>()
  return requests.map(({ idempotency }, index): CreatePlan => {
    if (idempotency === undefined) return { kind: 'insert' }
    const id = idempotencyRecordId(idempotency.apiKeyId, idempotency.idempotencyKey)
    const inBatch = earlier.get(id)
    if (inBatch !== undefined) {
      return inBatch.fingerprint === idempotency.fingerprint
        ? { kind: 'same-batch', index: inBatch.index }
        : { kind: 'reused' }
    }
    const record = stored.get(id)
    if (record !== undefined && record.expiresAtMs > idempotency.requestedAtMs) {
      return record.fingerprint === idempotency.fingerprint
        ? { kind: 'replay', petId: record.petId }
        : { kind: 'reused' }
    }
    earlier.set(id, { index, fingerprint: idempotency.fingerprint })
    return { kind: 'insert' }
  })
}

/** The creates whose plan is to insert a pet, in batch order: `createOutcomes` expects their pets so. */
export function requestsToInsert(
  requests: readonly CreatePetRequest[],
  plans: readonly CreatePlan[],
): CreatePetRequest[] {
  return requests.filter((_, index) => plans[index]?.kind === 'insert')
}

/**
 * Each create's result, once the batch's inserts are done: `inserted` holds the new pets in the order of
 * the `insert` plans, `replayed` the earlier pets by id.
 */
export function createOutcomes(
  plans: readonly CreatePlan[],
  inserted: readonly Pet[],
  replayed: ReadonlyMap<bigint, Pet>,
): CreateOutcome[] {
  const byIndex = new Map<number, Pet>()
  let next = 0
  plans.forEach((plan, index) => {
    if (plan.kind === 'insert') byIndex.set(index, inserted[next++] as Pet)
  })
  return plans.map((plan, index) => {
    if (plan.kind === 'reused') return new IdempotencyKeyReusedError()
    if (plan.kind === 'insert') return { pet: byIndex.get(index) as Pet, replayed: false }
    const pet = plan.kind === 'replay' ? replayed.get(plan.petId) : byIndex.get(plan.index)
    if (pet === undefined) throw new Error('an idempotency record points at a pet that does not exist')
    return { pet, replayed: true }
  })
}

/** The idempotency records of a batch's keyed creates, in batch order. */
export function idempotencyRecordsOf(requests: readonly CreatePetRequest[]): IdempotencyRecord[] {
  return requests.flatMap(({ idempotency }) => (idempotency ? [idempotency] : []))
}

/**
 * Each create's result when the batch's writes were refused: a create whose key has its record is
 * answered with its pet (`replayed`, by id), as a replay is; a key reused for another pet is refused as
 * ever; every other create gets `refusal`.
 */
export function outcomesWithoutWrites<Refusal>(
  plans: readonly CreatePlan[],
  replayed: (petId: bigint) => Pet | undefined,
  refusal: Refusal,
): Array<CreateOutcome | Refusal> {
  return plans.map((plan) => {
    if (plan.kind === 'reused') return new IdempotencyKeyReusedError()
    const pet = plan.kind === 'replay' ? replayed(plan.petId) : undefined
    return pet === undefined ? refusal : { pet, replayed: true }
  })
}
