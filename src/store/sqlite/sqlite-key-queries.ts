import { type KeyRow, keyRecordFromRow } from '../shared/rows.ts'
import type { ApiKeyRecord, DeprecatedCallCount, KeyIdentity, NewApiKey } from '../store.ts'
import type { SqliteConnection } from './sqlite-connection.ts'
import { keyNameTaken } from './sqlite-errors.ts'
import { NOW } from './sqlite-migrations.ts'

const KEY_COLUMNS = 'id, name, hint, created_at, revoked_at, deprecated_calls, last_deprecated_call_at'

export async function createApiKey(
  db: SqliteConnection,
  { name, hash, hint }: NewApiKey,
): Promise<ApiKeyRecord> {
  const row = await db
    .run(() =>
      db
        .statement(`INSERT INTO api_keys (name, hash, hint) VALUES (?, ?, ?) RETURNING ${KEY_COLUMNS}`)
        .get(name, hash, hint),
    )
    .catch((error: unknown) => Promise.reject(keyNameTaken(error, name)))
  return keyRecordFromRow(row as unknown as KeyRow)
}

export async function apiKeyStored(db: SqliteConnection, hash: string): Promise<boolean> {
  return (await db.run(() => db.statement('SELECT 1 FROM api_keys WHERE hash = ?').get(hash))) !== undefined
}

export async function ensureApiKey(db: SqliteConnection, { name, hash, hint }: NewApiKey): Promise<void> {
  // Looked up first: a start on a read-only database finds its keys there, and writes nothing.
  if (await apiKeyStored(db, hash)) return
  await db
    .run(() =>
      db
        .statement('INSERT INTO api_keys (name, hash, hint) VALUES (?, ?, ?) ON CONFLICT (hash) DO NOTHING')
        .run(name, hash, hint),
    )
    .catch((error: unknown) => Promise.reject(keyNameTaken(error, name)))
}

export function findActiveApiKeys(
  db: SqliteConnection,
  hashes: readonly string[],
): Promise<(KeyIdentity | undefined)[]> {
  return db.run(() => {
    // In-process, one indexed read per hash costs less than building a statement for each count of them.
    const find = db.statement('SELECT id, name FROM api_keys WHERE hash = ? AND revoked_at IS NULL')
    return hashes.map((hash) => {
      const row = find.get(hash)
      return row === undefined ? undefined : { id: row.id as bigint, name: row.name as string }
    })
  })
}

export function listApiKeys(db: SqliteConnection): Promise<ApiKeyRecord[]> {
  return db.run(() => {
    const rows = db.statement(`SELECT ${KEY_COLUMNS} FROM api_keys ORDER BY id`).all()
    return (rows as unknown as KeyRow[]).map(keyRecordFromRow)
  })
}

export function revokeApiKey(db: SqliteConnection, name: string): Promise<boolean> {
  return db.run(() => {
    const result = db
      .statement(`UPDATE api_keys SET revoked_at = ${NOW} WHERE name = ? AND revoked_at IS NULL`)
      .run(name)
    return Number(result.changes) > 0
  })
}

export function recordDeprecatedCalls(
  db: SqliteConnection,
  counts: readonly DeprecatedCallCount[],
): Promise<void> {
  return db.run(() => {
    const record = db.statement(`UPDATE api_keys SET deprecated_calls = deprecated_calls + ?,
      last_deprecated_call_at = max(coalesce(last_deprecated_call_at, ''), ?) WHERE id = ?`)
    // Committed without a sync, which every request would wait for: a power cut may lose these counts as a
    // kill -9 loses those not yet flushed; the next synced commit carries them (docs/decisions.md,
    // "Deprecated-call counts are committed without a sync"). SQLite takes it only outside a transaction.
    db.exec('PRAGMA synchronous = NORMAL')
    try {
      db.transaction(() => {
        for (const { apiKeyId, calls, lastCallAtMs } of counts) {
          record.run(calls, new Date(lastCallAtMs).toISOString(), apiKeyId)
        }
      })
    } finally {
      db.exec('PRAGMA synchronous = FULL')
    }
  })
}
