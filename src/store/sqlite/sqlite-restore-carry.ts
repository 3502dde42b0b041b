import { DatabaseSync } from 'node:sqlite'

/** What a restore keeps of the database it replaces: its revocations, and the ids it gave out. */
export interface CarriedForward {
  /** Keys revoked there that the backup holds active, revoked again. */
  revocations: number
  /** Active keys there that the backup does not hold (made since it was taken): gone with the restore. */
  keysNotInBackup: number
}

/**
 * Keeps in the restored `copy` what must outlive a restore, read from the database it replaces (`old`,
 * held): a key revoked there stays revoked (a backup taken before would bring a leaked key back), and the
 * id sequences stay above every id given out there (a client holding `/v1/pets/9` must not get another
 * pet under it). Keys made since the backup are only counted: credentials are not made back.
 */
export function carryForward(old: DatabaseSync, copy: string): CarriedForward {
  const db = new DatabaseSync(copy)
  try {
    db.exec('BEGIN IMMEDIATE')
    const revoke = db.prepare('UPDATE api_keys SET revoked_at = ? WHERE hash = ? AND revoked_at IS NULL')
    let revocations = 0
    for (const { hash, revoked_at } of old
      .prepare('SELECT hash, revoked_at FROM api_keys WHERE revoked_at IS NOT NULL')
      .all()) {
      revocations += Number(revoke.run(revoked_at as string, hash as string).changes)
    }
    for (const table of ['pets', 'api_keys']) {
      const given = old.prepare(
        `SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = ?), 0),
                    coalesce((SELECT max(id) FROM ${table}), 0)) AS id`,
      )
      given.setReadBigInts(true)
      const id = (given.get(table) as { id: bigint }).id
      db.prepare('UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = ?').run(id, table)
      db.prepare(
        'INSERT INTO sqlite_sequence (name, seq) SELECT ?, ? WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = ?)',
      ).run(table, id, table)
    }
    db.exec('COMMIT')
    const held = new Set(
      db
        .prepare('SELECT hash FROM api_keys')
        .all()
        .map((row) => row.hash),
    )
    const active = old.prepare('SELECT hash FROM api_keys WHERE revoked_at IS NULL').all()
    return { revocations, keysNotInBackup: active.filter((row) => !held.has(row.hash)).length }
  } finally {
    db.close()
  }
}
