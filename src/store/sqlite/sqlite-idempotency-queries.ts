import { purgeInChunks } from '../shared/chunked-purge.ts'
import type { StoredIdempotencyRecord } from '../shared/idempotent-batch.ts'
import { IDEMPOTENCY_COLUMNS, type IdempotencyRecordRow, idempotencyRecordsFromRows } from '../shared/rows.ts'
import type { IdempotencyRecord } from '../store.ts'
import type { SqliteConnection } from './sqlite-connection.ts'

// One chunk of the purge: the oldest expired records first, by the expiry index.
const PURGE_CHUNK_SQL = `DELETE FROM idempotency_keys WHERE (api_key_id, idempotency_key) IN
  (SELECT api_key_id, idempotency_key FROM idempotency_keys WHERE expires_at_ms <= ? ORDER BY expires_at_ms LIMIT ?)`

/** The idempotency records already stored for these, by record id (inside the batch's transaction). */
export function storedIdempotencyRecords(
  db: SqliteConnection,
  records: readonly IdempotencyRecord[],
): Map<string, StoredIdempotencyRecord> {
  const find = db.statement('SELECT * FROM idempotency_keys WHERE api_key_id = ? AND idempotency_key = ?')
  const rows = records.flatMap((record) => {
    const row = find.get(record.apiKeyId, record.idempotencyKey)
    return row === undefined ? [] : [row as unknown as IdempotencyRecordRow]
  })
  return idempotencyRecordsFromRows(rows)
}

/** Writes a record for the pet its key created; an expired record with the same key is replaced. */
export function writeIdempotencyRecord(db: SqliteConnection, record: IdempotencyRecord, petId: bigint): void {
  db.statement(`INSERT INTO idempotency_keys (${IDEMPOTENCY_COLUMNS}) VALUES (?, ?, ?, ?, ?)
      ON CONFLICT (api_key_id, idempotency_key) DO UPDATE SET
        fingerprint = excluded.fingerprint, pet_id = excluded.pet_id, expires_at_ms = excluded.expires_at_ms`).run(
    record.apiKeyId,
    record.idempotencyKey,
    record.fingerprint,
    petId,
    record.expiresAtMs,
  )
}

/** Deletes the records expired by `nowMs`, one chunk per statement; resolves to how many. */
export function purgeExpiredIdempotencyRecords(
  db: SqliteConnection,
  nowMs: number,
  signal?: AbortSignal,
): Promise<number> {
  const purgeChunk = (rows: number) =>
    db.run(() => Number(db.statement(PURGE_CHUNK_SQL).run(nowMs, rows).changes))
  return purgeInChunks(purgeChunk, signal)
}
