import { DatabaseSync } from 'node:sqlite'

/** `read` of the SQLite file at `path`, opened read-only for it alone (no -wal or -shm kept open). */
export function readOnly<T>(path: string, read: (db: DatabaseSync) => T): T {
  const db = new DatabaseSync(path, { readOnly: true })
  try {
    return read(db)
  } finally {
    db.close()
  }
}

/** How many rows `table` of the SQLite file at `path` holds. */
export function rowCount(path: string, table: string): number {
  return readOnly(path, (db) => Number(db.prepare(`SELECT count(*) AS n FROM ${table}`).get()?.n))
}
