import type { Statement } from './postgres-statements.ts'

type Table = 'pets' | 'api_keys'

// What `table`'s sequence has drawn: nothing until its first draw (`is_called`), whatever `last_value` says.
const drawn = (table: Table) => `(SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM ${table}_id_seq)`
// `table`'s highest row id, 0 when it has none.
const highestRow = (table: Table) => `(SELECT coalesce(max(id), 0) FROM ${table})`

/**
 * The highest id `table` has given out: its highest row, or its sequence's mark when ids were drawn past
 * it (a create rolled back), so that a new row is never given an id handed out before.
 */
export function highestIdGiven(table: Table): Statement {
  return {
    name: `${table}.highest-given`,
    text: `SELECT GREATEST(${highestRow(table)}, ${drawn(table)}) AS id`,
  }
}

/**
 * Moves `table`'s sequence past `id`, past every row it holds and past what it drew, never lowering it:
 * the next row gets a higher id. With nothing to raise (an empty table, `id` 0) it sets nothing.
 */
export function raiseIdSequence(table: Table, id: bigint): Statement {
  return {
    name: `${table}.raise-sequence`,
    text: `SELECT setval(pg_get_serial_sequence('${table}', 'id'), GREATEST($1::bigint, ${highestRow(table)},
         ${drawn(table)}), true)
       WHERE GREATEST($1::bigint, ${highestRow(table)}) > 0`,
    values: [String(id)],
  }
}
