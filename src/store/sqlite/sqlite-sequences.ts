import type { StatementSync } from 'node:sqlite'

/** A statement for `sql` on the connection in use (a store's, whose statements are kept, or a bare one). */
type Prepare = (sql: string) => StatementSync

type Table = 'pets' | 'api_keys'

/**
 * The highest id `table` has given out: AUTOINCREMENT's mark in `sqlite_sequence`, or a higher row (one
 * inserted with its id by a copy), so that a new row is never given an id handed out before.
 */
export function highestIdGiven(prepare: Prepare, table: Table): bigint {
  const statement = prepare(`SELECT max(coalesce((SELECT max(id) FROM ${table}), 0),
      coalesce((SELECT seq FROM sqlite_sequence WHERE name = '${table}'), 0)) AS id`)
  statement.setReadBigInts(true)
  return (statement.get() as { id: bigint }).id
}

/** Raises AUTOINCREMENT's mark of `table` to `id` at least, never lowering it: the next row gets a higher id. */
export function raiseIdSequence(prepare: Prepare, table: Table, id: bigint): void {
  prepare('UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = ?').run(id, table)
  prepare(
    'INSERT INTO sqlite_sequence (name, seq) SELECT ?, ? WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = ?)',
  ).run(table, id, table)
}
