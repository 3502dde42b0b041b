import { randomBytes } from 'node:crypto'
import { setImmediate } from 'node:timers/promises'
import { INT64_MIN } from '../../schemas/int64.ts'
import { CopyConflictError, IDS_SHOWN, SourceKeysActiveError, TargetNotEmptyError } from './copy-errors.ts'
import { UNFINISHED_MARK } from './copy-mark.ts'
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
  /**
   * The cursor secret, or undefined if no server has made it (the source is only read): the target gets
   * it, and holding it marks the target as a copy of this source, so an interrupted copy can be run again.
   */
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
  /** Whether an earlier run left it marked as a copy under way (`markUnfinished`). */
  unfinished: boolean
}

/** What the target holds, in one statement both engines run (`contentsOf` reads its row). */
export const TARGET_CONTENTS_SQL = `SELECT (SELECT count(*) FROM pets) AS pets, (SELECT count(*) FROM api_keys) AS keys,
  (SELECT value FROM service_settings WHERE name = 'service_secret') AS secret,
  (SELECT value FROM service_settings WHERE name = '${UNFINISHED_MARK}') AS unfinished`

export interface TargetContentsRow {
  pets: bigint
  keys: bigint
  secret: string | null
  unfinished: string | null
}

/** The target's active keys, in id order, in one statement both engines run (`activeKeys`). */
export const ACTIVE_KEYS_SQL = 'SELECT name, hash FROM api_keys WHERE revoked_at IS NULL ORDER BY id'

export function contentsOf(row: TargetContentsRow | undefined): TargetContents {
  if (row === undefined) throw new Error('the target did not answer')
  return {
    pets: Number(row.pets),
    keys: Number(row.keys),
    secret: row.secret ?? undefined,
    unfinished: row.unfinished !== null,
  }
}

/**
 * What a copy writes (`<engine>-load.ts`); every write can be repeated without changing the outcome. A
 * row the target holds with the same id and content is an earlier copy of it; any other row at its id
 * (or, for a key, under its name or hash) is a conflict: the write throws CopyConflictError, rolled back.
 */
export interface CopyTarget {
  /** Migrates the target, then says what it holds. */
  prepare(): Promise<TargetContents>
  /** The names and hashes of the keys the target holds unrevoked, in id order (`ACTIVE_KEYS_SQL`). */
  activeKeys(): Promise<{ name: string; hash: string }[]>
  /**
   * One transaction: inserts keys not there yet, brings revocations and deprecated-call counts up to
   * date, and sets the cursor secret. Resolves to how many keys were new.
   */
  writeKeys(keys: readonly CopiedKey[], secret: string): Promise<number>
  /** The ids of these pets the target holds with other content (name, category, status, created_at). */
  petConflicts(pets: readonly CopiedPet[]): Promise<bigint[]>
  /** One transaction: inserts the pets not there yet. Resolves to how many were new. */
  writePets(pets: readonly CopiedPet[]): Promise<number>
  writeIdempotencyRecords(rows: readonly IdempotencyRecordRow[]): Promise<number>
  /**
   * Moves the id sequences past these, so the next create gets a higher id (never lowered); resolves to
   * the pet id the next create is drawn above, which ids given out on the target before may put higher.
   */
  raiseSequences(petId: bigint, keyId: bigint): Promise<bigint>
  /**
   * Marks the target as a copy under way since `since` (an earlier run's mark is kept): a service started
   * on it meanwhile warns that it lacks what is not copied yet, and keeps no list page.
   */
  markUnfinished(since: string): Promise<void>
  /** Clears that mark and notes when the copy finished (`at`), in one transaction. */
  markFinished(at: string): Promise<void>
  close(): Promise<void>
}

export interface CopyOptions {
  chunkSize: number
  intoNonEmpty: boolean
  /**
   * Pets only: no API key, and so no Idempotency-Key record (a staging copy of production); refused while
   * the target holds keys of the source active (SourceKeysActiveError).
   */
  withoutKeys?: boolean
  /** Stops after this many chunks that added pets (a copy in slots); a re-run continues. */
  maxChunks?: number
  onProgress(walked: number, total: number): void
}

export interface CopyReport {
  complete: boolean
  pets: number
  /** Keys inserted; the source's other keys were there already, their revocations and counts brought up to date. */
  keys: number
  /** The source's keys, inserted or brought up to date. */
  sourceKeys: number
  idempotencyRecords: number
  /** The id the target's next create is drawn above. */
  highestPetId: bigint
}

/**
 * The source's pets in id-ordered chunks, from after `afterId`. Each waits a turn of the event loop: an
 * engine that answers synchronously (SQLite) would otherwise hold off Ctrl-C and SIGTERM to the end.
 */
async function* chunksOf(source: CopySource, chunkSize: number, afterId = INT64_MIN) {
  for (;;) {
    await setImmediate()
    const chunk = await source.pets(afterId, chunkSize)
    if (chunk.length === 0) return
    yield chunk
    afterId = (chunk.at(-1) as CopiedPet).id
  }
}

/** Every conflict among the source's pets after `afterId`, added to those already `found`. */
async function petConflicts(
  source: CopySource,
  target: CopyTarget,
  chunkSize: number,
  afterId = INT64_MIN,
  found: CopyConflictError | undefined = undefined,
): Promise<CopyConflictError | undefined> {
  const ids = [...(found?.ids ?? [])]
  let count = found?.count ?? 0
  for await (const chunk of chunksOf(source, chunkSize, afterId)) {
    const conflicts = await target.petConflicts(chunk)
    count += conflicts.length
    ids.push(...conflicts.slice(0, IDS_SHOWN))
  }
  return count === 0 ? undefined : new CopyConflictError('pets', ids, count)
}

/**
 * Copies a whole store (keys with the signing secret, pets in id-ordered chunks, idempotency records, id
 * sequences), inserting only what is missing, so a copy stopped anywhere can be run again; a conflict stops
 * it (CopyConflictError; docs/decisions.md, "copy: the secret is the resume mark, not a position").
 */
export async function copyStore(
  source: CopySource,
  target: CopyTarget,
  options: CopyOptions,
): Promise<CopyReport> {
  await source.prepare()
  const held = await target.prepare()
  const sourceSecret = await source.secret()
  const resuming = sourceSecret !== undefined && held.secret === sourceSecret
  const sourceKeys = await source.keys()
  if (!resuming && !options.intoNonEmpty && (held.pets > 0 || held.keys > 0)) {
    const keysCollide = !options.withoutKeys && held.keys > 0 && sourceKeys.length > 0
    throw new TargetNotEmptyError(held, sourceSecret !== undefined, keysCollide)
  }
  // A source no server has opened signed no cursor: the target keeps its own secret, or gets a new one.
  const secret = sourceSecret ?? held.secret ?? randomBytes(32).toString('base64url')
  // Refused rather than revoked by the copy: the target may be a live store whose clients hold them.
  if (options.withoutKeys) {
    const hashes = new Set(sourceKeys.map((key) => key.hash))
    const active = (await target.activeKeys()).filter((key) => hashes.has(key.hash))
    if (active.length > 0) throw new SourceKeysActiveError(active.map((key) => key.name))
  }
  // Into pets of the target's own, every pet is checked before anything is written: a refused merge
  // leaves the target as it was. (Resuming, a conflict can only come from writes since: checked per chunk.)
  if (!resuming && held.pets > 0) {
    const conflicts = await petConflicts(source, target, options.chunkSize)
    if (conflicts !== undefined) throw conflicts
  }
  // Keys and secret first, in one transaction, then the mark: a key that collides rolls it back, and a
  // refused copy leaves the target as it was, marks included (its services would take them for a copy).
  const keys = options.withoutKeys ? [] : sourceKeys
  const keysReport = { keys: await target.writeKeys(keys, secret), sourceKeys: keys.length }
  await target.markUnfinished(new Date().toISOString())
  try {
    return await copyMarked(source, target, options, { keys, keysReport })
  } catch (error) {
    // A conflict no re-run gets past: a target that was not under way before this run (a finished copy
    // serving since) is not left marked so, which would warn at every start and keep no list page; its
    // services let go of the pages this run may have changed, as at a finish.
    if (error instanceof CopyConflictError && !held.unfinished)
      await target.markFinished(new Date().toISOString())
    throw error
  }
}

/** The copy's writes after the keys, once the target is marked as a copy under way. */
async function copyMarked(
  source: CopySource,
  target: CopyTarget,
  options: CopyOptions,
  { keys, keysReport }: { keys: readonly CopiedKey[]; keysReport: Pick<CopyReport, 'keys' | 'sourceKeys'> },
): Promise<CopyReport> {
  const highestKeyId = keys.reduce((highest, key) => (key.id > highest ? key.id : highest), 0n)
  // Past the source's ids before any pet is copied: a target served before a stopped copy is finished
  // gives new pets ids no source pet holds (PostgreSQL's sequences do not follow copied ids).
  const raisedTo = await target.raiseSequences(await source.highestPetId(), highestKeyId)

  const total = await source.petCount()
  let walked = 0
  let pets = 0
  let chunks = 0
  for await (const chunk of chunksOf(source, options.chunkSize)) {
    if (chunks === options.maxChunks) {
      return { ...keysReport, complete: false, pets, idempotencyRecords: 0, highestPetId: raisedTo }
    }
    const added = await target.writePets(chunk).catch(async (error: unknown) => {
      if (!(error instanceof CopyConflictError)) throw error
      throw await petConflicts(source, target, options.chunkSize, (chunk.at(-1) as CopiedPet).id, error)
    })
    if (added > 0) chunks++
    pets += added
    walked += chunk.length
    options.onProgress(walked, total)
  }
  let records = 0
  let afterRecord: IdempotencyRecordRow | undefined
  while (!options.withoutKeys) {
    await setImmediate()
    const chunk = await source.idempotencyRecords(afterRecord, options.chunkSize)
    if (chunk.length === 0) break
    records += await target.writeIdempotencyRecords(chunk)
    afterRecord = chunk.at(-1)
  }

  // Again: the source may have taken pets while it was copied.
  const highestPetId = await target.raiseSequences(await source.highestPetId(), highestKeyId)
  await target.markFinished(new Date().toISOString())
  return { ...keysReport, complete: true, pets, idempotencyRecords: records, highestPetId }
}
