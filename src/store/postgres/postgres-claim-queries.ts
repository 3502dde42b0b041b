import { purgeInChunks } from '../chunked-purge.ts'
import type { StoredClaim } from '../idempotent-batch.ts'
import { type ClaimRow, claimsFromRows } from '../rows.ts'
import type { IdempotencyClaim } from '../store.ts'
import type { PostgresDatabase, Queryable } from './postgres-database.ts'

/** A claim about to be written: its key now stands for this pet. */
export interface ClaimRecord {
  claim: IdempotencyClaim
  petId: bigint
}

/** The idempotency records already stored for these claims, by claim id. */
export async function storedClaims(
  client: Queryable,
  claims: readonly IdempotencyClaim[],
): Promise<Map<string, StoredClaim>> {
  if (claims.length === 0) return new Map()
  const { rows } = await client.query<ClaimRow>({
    name: 'claims.find',
    text: `SELECT * FROM idempotency_keys WHERE (api_key_id, idempotency_key) IN
           (SELECT * FROM unnest($1::bigint[], $2::text[]))`,
    values: [claims.map((c) => c.apiKeyId.toString()), claims.map((c) => c.key)],
  })
  return claimsFromRows(rows)
}

/** Writes the records; an expired record with the same key is replaced. */
export async function recordClaims(client: Queryable, records: readonly ClaimRecord[]): Promise<void> {
  if (records.length === 0) return
  await client.query({
    name: 'claims.record',
    text: `INSERT INTO idempotency_keys
           SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bigint[], $5::bigint[])
           ON CONFLICT (api_key_id, idempotency_key) DO UPDATE SET fingerprint = excluded.fingerprint,
             pet_id = excluded.pet_id, expires_at_ms = excluded.expires_at_ms`,
    values: [
      records.map((r) => r.claim.apiKeyId.toString()),
      records.map((r) => r.claim.key),
      records.map((r) => r.claim.fingerprint),
      records.map((r) => r.petId.toString()),
      records.map((r) => String(r.claim.expiresAtMs)),
    ],
  })
}

/**
 * Deletes the records expired by `nowMs`, one chunk per statement (each its own short transaction, not
 * one long one holding millions of row locks); resolves to how many. Rows another instance is purging
 * right now are skipped, not waited for.
 */
export function purgeClaims(
  database: PostgresDatabase,
  nowMs: number,
  signal?: AbortSignal,
): Promise<number> {
  return purgeInChunks(async (rows) => {
    const [row] = await database.query<{ deleted: number }>(
      'claims.purge',
      `WITH expired AS (
         SELECT api_key_id, idempotency_key FROM idempotency_keys WHERE expires_at_ms <= $1
         ORDER BY expires_at_ms LIMIT $2 FOR UPDATE SKIP LOCKED),
       gone AS (
         DELETE FROM idempotency_keys k USING expired e
         WHERE k.api_key_id = e.api_key_id AND k.idempotency_key = e.idempotency_key RETURNING 1)
       SELECT count(*)::int AS deleted FROM gone`,
      [nowMs, rows],
    )
    return row?.deleted ?? 0
  }, signal)
}
