import { type KeyRow, keyRecordFromRow } from '../shared/rows.ts'
import type { ApiKeyRecord, DeprecatedCallCount, KeyIdentity, NewApiKey } from '../store.ts'
import type { PostgresPool } from './postgres-connection.ts'
import { keyNameTaken } from './postgres-errors.ts'
import { isoUtc } from './postgres-statements.ts'

const KEY_COLUMNS = `id, name, hint, ${isoUtc('created_at')}, ${isoUtc('revoked_at')}, deprecated_calls, ${isoUtc('last_deprecated_call_at')}`

export async function createApiKey(
  pool: PostgresPool,
  { name, hash, hint }: NewApiKey,
): Promise<ApiKeyRecord> {
  const [row] = await pool
    .query<KeyRow>({
      name: 'keys.create',
      text: `INSERT INTO api_keys (name, hash, hint) VALUES ($1, $2, $3) RETURNING ${KEY_COLUMNS}`,
      values: [name, hash, hint],
    })
    .catch((error: unknown) => Promise.reject(keyNameTaken(error, name)))
  return keyRecordFromRow(row as KeyRow)
}

export async function apiKeyStored(pool: PostgresPool, hash: string): Promise<boolean> {
  const stored = await pool.query({
    name: 'keys.stored',
    text: 'SELECT 1 FROM api_keys WHERE hash = $1',
    values: [hash],
  })
  return stored.length > 0
}

export async function ensureApiKey(pool: PostgresPool, { name, hash, hint }: NewApiKey): Promise<void> {
  // Looked up first: a start on a read-only database (a standby) finds its keys there, and writes nothing.
  if (await apiKeyStored(pool, hash)) return
  await pool
    .query({
      name: 'keys.ensure',
      text: 'INSERT INTO api_keys (name, hash, hint) VALUES ($1, $2, $3) ON CONFLICT (hash) DO NOTHING',
      values: [name, hash, hint],
    })
    .catch((error: unknown) => Promise.reject(keyNameTaken(error, name)))
}

export async function findActiveApiKeys(
  pool: PostgresPool,
  hashes: readonly string[],
): Promise<(KeyIdentity | undefined)[]> {
  const rows = await pool.query<KeyIdentity & { hash: string }>(
    {
      name: 'keys.find',
      text: 'SELECT hash, id, name FROM api_keys WHERE hash = ANY($1::text[]) AND revoked_at IS NULL',
      values: [hashes],
    },
    { reads: true },
  )
  const found = new Map(rows.map((row) => [row.hash, { id: row.id, name: row.name }]))
  return hashes.map((hash) => found.get(hash))
}

export async function listApiKeys(pool: PostgresPool): Promise<ApiKeyRecord[]> {
  const rows = await pool.query<KeyRow>({
    name: 'keys.list',
    text: `SELECT ${KEY_COLUMNS} FROM api_keys ORDER BY id`,
  })
  return rows.map(keyRecordFromRow)
}

export async function revokeApiKey(pool: PostgresPool, name: string): Promise<boolean> {
  const rows = await pool.query({
    name: 'keys.revoke',
    text: 'UPDATE api_keys SET revoked_at = now() WHERE name = $1 AND revoked_at IS NULL RETURNING id',
    values: [name],
  })
  return rows.length > 0
}

export async function recordDeprecatedCalls(
  pool: PostgresPool,
  counts: readonly DeprecatedCallCount[],
): Promise<void> {
  if (counts.length === 0) return
  await pool.query({
    name: 'keys.deprecated-calls',
    text: `UPDATE api_keys SET deprecated_calls = deprecated_calls + t.calls,
       last_deprecated_call_at = GREATEST(last_deprecated_call_at, to_timestamp(t.last_ms / 1000.0))
     FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) AS t(id, calls, last_ms) WHERE api_keys.id = t.id`,
    values: [
      counts.map((c) => c.apiKeyId.toString()),
      counts.map((c) => String(c.calls)),
      counts.map((c) => String(c.lastCallAtMs)),
    ],
  })
}
