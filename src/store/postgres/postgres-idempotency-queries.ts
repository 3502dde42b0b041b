import { purgeInChunks } from '../shared/chunked-purge.ts'
import type { StoredIdempotencyRecord } from '../shared/idempotent-batch.ts'
import { type IdempotencyRecordRow, idempotencyRecordsFromRows } from '../shared/rows.ts'
import type { IdempotencyRecord } from '../store.ts'
import type { PostgresPool } from './postgres-connection.ts'
import type { Queryable } from './postgres-statements.ts'

/**
 * The idempotency records already stored for these, by record id: one primary-key probe per key (a row of
 * another of the batch's API keys with the same text is read, never matched), planned on each call
 * (docs/decisions.md, "Idempotency-Key records are looked up by their primary key, planned on each call").
 */
export async function storedIdempotencyRecords(
  client: Queryable,
  records: readonly IdempotencyRecord[],
): Promise<Map<string, StoredIdempotencyRecord>> {
  if (records.length === 0) return new Map()
  const { rows } = await client.query<IdempotencyRecordRow>({
    text: `SELECT * FROM idempotency_keys
           WHERE api_key_id = ANY($1::bigint[]) AND idempotency_key = ANY($2::text[])`,
    values: [[...new Set(records.map((r) => r.apiKeyId.toString()))], records.map((r) => r.idempotencyKey)],
  })
  return idempotencyRecordsFromRows(rows)
}

/**
 * Deletes the records expired by `nowMs`, one chunk per statement (each its own short transaction, not
 * one long one holding millions of row locks); resolves to how many. Rows another instance is purging
 * right now are skipped, not waited for.
 */
export function purgeExpiredIdempotencyRecords(
  pool: PostgresPool,
  nowMs: number,
  signal?: AbortSignal,
): Promise<number> {
  return purgeInChunks(async (rows) => {
    const [row] = await pool.query<{ deleted: number }>({
      name: 'idempotency.purge',
      text: `WITH expired AS (
         SELECT api_key_id, idempotency_key FROM idempotency_keys WHERE expires_at_ms <= $1
         ORDER BY expires_at_ms LIMIT $2 FOR UPDATE SKIP LOCKED),
       gone AS (
         DELETE FROM idempotency_keys k USING expired e
         WHERE k.api_key_id = e.api_key_id AND k.idempotency_key = e.idempotency_key RETURNING 1)
       SELECT count(*)::int AS deleted FROM gone`,
      values: [nowMs, rows],
    })
    return row?.deleted ?? 0
  }, signal)
}
