import { INT64_MIN } from '../../schemas/int64.ts'
import type { IdempotencyRecordRow, KeyRow, PetRow } from './rows.ts'

/** A pet as copied: its row and when it was created (ISO 8601 UTC). */
export interface CopiedPet extends PetRow {
  created_at: string
}

/** An API key as copied: its row with the hash (the key itself is never stored anywhere). */
export interface CopiedKey extends KeyRow {
  hash: string
}

/** What a copy reads, in id order (`<engine>-dump.ts`). */
export interface CopySource {
  /** Refuses a database whose schema is not the latest (the rows would not match). */
  prepare(): Promise<void>
  secret(): Promise<string | undefined>
  keys(): Promise<CopiedKey[]>
  petCount(): Promise<number>
  /** At most `limit` pets with ids above `afterId`, ascending. */
  pets(afterId: bigint, limit: number): Promise<CopiedPet[]>
  /** At most `limit` records after `after` in (api_key_id, idempotency_key) order. */
  idempotencyRecords(after: IdempotencyRecordRow | undefined, limit: number): Promise<IdempotencyRecordRow[]>
  /** The highest pet id ever given out (the sequence may be past the highest pet). */
  highestPetId(): Promise<bigint>
  close(): Promise<void>
}

/** What the target already holds, once migrated. */
export interface TargetContents {
  pets: number
  keys: number
  secret: string | undefined
  highestPetId: bigint
}

/** What the target holds, in one statement both engines run (`contentsOf` reads its row). */
export const TARGET_CONTENTS_SQL = `SELECT (SELECT count(*) FROM pets) AS pets, (SELECT count(*) FROM api_keys) AS keys,
  (SELECT value FROM service_settings WHERE name = 'service_secret') AS secret,
  (SELECT coalesce(max(id), 0) FROM pets) AS highest`

export interface TargetContentsRow {
  pets: bigint
  keys: bigint
  secret: string | null
  highest: bigint
}

export function contentsOf(row: TargetContentsRow | undefined): TargetContents {
  if (row === undefined) throw new Error('the target did not answer')
  return {
    pets: Number(row.pets),
    keys: Number(row.keys),
    secret: row.secret ?? undefined,
    highestPetId: row.highest,
  }
}

/** What a copy writes (`<engine>-load.ts`); every write can be repeated without changing the outcome. */
export interface CopyTarget {
  /** Migrates the target, then says what it holds. */
  prepare(): Promise<TargetContents>
  writeSecret(secret: string): Promise<void>
  /** Inserts keys not there yet (by id), and brings revocations and deprecated-call counts up to date. */
  writeKeys(keys: readonly CopiedKey[]): Promise<number>
  /** One transaction; a pet whose id is already there is left as it is. Resolves to how many were new. */
  writePets(pets: readonly CopiedPet[]): Promise<number>
  writeIdempotencyRecords(rows: readonly IdempotencyRecordRow[]): Promise<number>
  /** Moves the id sequences past these, so the next create gets a higher id. */
  raiseSequences(petId: bigint, keyId: bigint): Promise<void>
  close(): Promise<void>
}

export class TargetNotEmptyError extends Error {
  constructor({ pets, keys }: TargetContents) {
    super(
      `the target already holds ${pets} pets and ${keys} API keys, and is not an earlier copy of this source ` +
        '(give --into-non-empty to copy into it anyway)',
    )
    this.name = 'TargetNotEmptyError'
  }
}

export interface CopyOptions {
  chunkSize: number
  intoNonEmpty: boolean
  /** Stops after this many chunks of pets (a copy in slots); a re-run continues. */
  maxChunks?: number
  onProgress(copied: number, total: number): void
}

export interface CopyReport {
  complete: boolean
  pets: number
  keys: number
  idempotencyRecords: number
  /** The id the next create is drawn above. */
  highestPetId: bigint
}

/**
 * Copies a whole store: the signing secret first (a target holding the source's secret is an earlier,
 * possibly interrupted, copy of it: the pets continue after its highest id), then keys, pets in id-ordered
 * chunks, idempotency records, and the id sequences. Every write skips what is already there, so a copy
 * stopped anywhere can be run again.
 */
export async function copyStore(
  source: CopySource,
  target: CopyTarget,
  options: CopyOptions,
): Promise<CopyReport> {
  await source.prepare()
  const held = await target.prepare()
  const secret = await source.secret()
  const resuming = secret !== undefined && held.secret === secret
  if (!resuming && !options.intoNonEmpty && (held.pets > 0 || held.keys > 0))
    throw new TargetNotEmptyError(held)
  if (secret !== undefined) await target.writeSecret(secret)
  const keys = await source.keys()
  const keysCopied = await target.writeKeys(keys)

  const total = await source.petCount()
  let afterId = resuming ? held.highestPetId : INT64_MIN
  let pets = 0
  for (let chunks = 0; ; chunks++) {
    if (chunks === options.maxChunks) {
      return { complete: false, pets, keys: keysCopied, idempotencyRecords: 0, highestPetId: afterId }
    }
    const chunk = await source.pets(afterId, options.chunkSize)
    if (chunk.length === 0) break
    pets += await target.writePets(chunk)
    afterId = (chunk.at(-1) as CopiedPet).id
    options.onProgress(pets + (resuming ? held.pets : 0), total)
  }

  let records = 0
  let afterRecord: IdempotencyRecordRow | undefined
  for (;;) {
    const chunk = await source.idempotencyRecords(afterRecord, options.chunkSize)
    if (chunk.length === 0) break
    records += await target.writeIdempotencyRecords(chunk)
    afterRecord = chunk.at(-1)
  }

  const highestPetId = await source.highestPetId()
  const highestKeyId = keys.reduce((highest, key) => (key.id > highest ? key.id : highest), 0n)
  await target.raiseSequences(highestPetId, highestKeyId)
  return { complete: true, pets, keys: keysCopied, idempotencyRecords: records, highestPetId }
}
