import { DatabaseSync, type SQLInputValue, type StatementSync } from 'node:sqlite'
import { refuseConflicts } from '../shared/copy-errors.ts'
import { FINISHED_MARK, UNFINISHED_MARK } from '../shared/copy-mark.ts'
import { IDEMPOTENCY_COLUMNS, type IdempotencyRecordRow } from '../shared/rows.ts'
import {
  ACTIVE_KEYS_SQL,
  type CopiedKey,
  type CopiedPet,
  type CopyTarget,
  contentsOf,
  TARGET_CONTENTS_SQL,
  type TargetContents,
  type TargetContentsRow,
} from '../shared/store-copy.ts'
import { COMMAND_BUSY_TIMEOUT_MS, SqliteConnection } from './sqlite-connection.ts'
import { removeWithCompanions } from './sqlite-durable-files.ts'
import { migrate } from './sqlite-migrator.ts'
import { highestIdGiven, raiseIdSequence } from './sqlite-sequences.ts'

/** Runs `insert` once per row in one transaction; resolves to how many rows it added. */
function insertEach<T>(
  db: SqliteConnection,
  insert: StatementSync,
  rows: readonly T[],
  values: (row: T) => SQLInputValue[],
) {
  return db.run(() =>
    db.transaction(() => rows.reduce((sum, row) => sum + Number(insert.run(...values(row)).changes), 0)),
  )
}

/** Writes a copied store into a SQLite file for `petstore copy`; each write is one transaction. */
export class SqliteLoad implements CopyTarget {
  readonly #db: SqliteConnection

  constructor(path: string) {
    this.#db = new SqliteConnection({ path, busyTimeoutMs: COMMAND_BUSY_TIMEOUT_MS })
  }

  async prepare(): Promise<TargetContents> {
    await migrate(this.#db)
    return this.#db.run(() =>
      contentsOf(this.#db.statement(TARGET_CONTENTS_SQL).get() as unknown as TargetContentsRow),
    )
  }

  activeKeys(): Promise<{ name: string; hash: string }[]> {
    return this.#db.run(
      () => this.#db.statement(ACTIVE_KEYS_SQL).all() as unknown as { name: string; hash: string }[],
    )
  }

  writeKeys(keys: readonly CopiedKey[], secret: string): Promise<number> {
    const insert = this.#db.statement(`INSERT INTO api_keys (id, name, hash, hint, created_at, revoked_at,
      deprecated_calls, last_deprecated_call_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`)
    // A revocation is never undone and counts never go back: the target may have moved on since an earlier
    // copy (it is the live store after the switch), and a re-run only adds what the source knows more of.
    const update = this.#db.statement(`UPDATE api_keys SET revoked_at = coalesce(revoked_at, ?1),
      deprecated_calls = max(deprecated_calls, ?2),
      last_deprecated_call_at = coalesce(max(last_deprecated_call_at, ?3), last_deprecated_call_at, ?3)
      WHERE id = ?4 AND hash = ?5`)
    const same = this.#db.statement('SELECT 1 FROM api_keys WHERE id = ? AND name = ? AND hash = ?')
    const setSecret = this.#db.statement(`INSERT INTO service_settings VALUES ('service_secret', ?)
      ON CONFLICT (name) DO UPDATE SET value = excluded.value`)
    return this.#db.run(() =>
      this.#db.transaction(() => {
        let inserted = 0
        for (const k of keys) {
          const { changes } = insert.run(
            k.id,
            k.name,
            k.hash,
            k.hint,
            k.created_at,
            k.revoked_at,
            k.deprecated_calls,
            k.last_deprecated_call_at,
          )
          inserted += Number(changes)
          update.run(k.revoked_at, k.deprecated_calls, k.last_deprecated_call_at, k.id, k.hash)
        }
        // Checked after inserting: a key left out because its name or hash was taken is missing too.
        refuseConflicts(
          'keys',
          keys.filter((k) => same.get(k.id, k.name, k.hash) === undefined).map((k) => k.id),
        )
        setSecret.run(secret)
        return inserted
      }),
    )
  }

  petConflicts(pets: readonly CopiedPet[]): Promise<bigint[]> {
    return this.#db.run(() => this.#differingPets(pets, false))
  }

  writePets(pets: readonly CopiedPet[]): Promise<number> {
    const insert = this.#db.statement(
      'INSERT INTO pets (id, name, category_id, status, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING',
    )
    return this.#db.run(() =>
      this.#db.transaction(() => {
        const added = pets.reduce(
          (sum, p) => sum + Number(insert.run(p.id, p.name, p.category_id, p.status, p.created_at).changes),
          0,
        )
        refuseConflicts('pets', this.#differingPets(pets, true))
        return added
      }),
    )
  }

  /** Ids of `pets` the file holds with other content (or, `missingToo`, not at all). */
  #differingPets(pets: readonly CopiedPet[], missingToo: boolean): bigint[] {
    const held = this.#db.statement('SELECT name, category_id, status, created_at FROM pets WHERE id = ?')
    return pets
      .filter((p) => {
        const row = held.get(p.id)
        if (row === undefined) return missingToo
        return (
          row.name !== p.name ||
          row.category_id !== p.category_id ||
          row.status !== p.status ||
          row.created_at !== p.created_at
        )
      })
      .map((p) => p.id)
  }

  writeIdempotencyRecords(rows: readonly IdempotencyRecordRow[]): Promise<number> {
    const insert = this.#db.statement(
      `INSERT INTO idempotency_keys (${IDEMPOTENCY_COLUMNS}) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
    )
    return insertEach(this.#db, insert, rows, (r) => [
      r.api_key_id,
      r.idempotency_key,
      r.fingerprint,
      r.pet_id,
      r.expires_at_ms,
    ])
  }

  async raiseSequences(petId: bigint, keyId: bigint): Promise<bigint> {
    // AUTOINCREMENT keeps the highest id given out per table in sqlite_sequence; explicit inserts raised it.
    const prepare = (sql: string) => this.#db.statement(sql)
    return this.#db.run(() =>
      this.#db.transaction(() => {
        raiseIdSequence(prepare, 'pets', petId)
        raiseIdSequence(prepare, 'api_keys', keyId)
        return highestIdGiven(prepare, 'pets')
      }),
    )
  }

  markUnfinished(since: string): Promise<void> {
    return this.#db.run(() => {
      this.#db
        .statement('INSERT INTO service_settings VALUES (?, ?) ON CONFLICT (name) DO NOTHING')
        .run(UNFINISHED_MARK, since)
    })
  }

  markFinished(at: string): Promise<void> {
    return this.#db.run(() =>
      this.#db.transaction(() => {
        this.#db.statement('DELETE FROM service_settings WHERE name = ?').run(UNFINISHED_MARK)
        this.#db
          .statement(
            'INSERT INTO service_settings VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value',
          )
          .run(FINISHED_MARK, at)
      }),
    )
  }

  async close(): Promise<void> {
    this.#db.close()
  }
}

/**
 * Removes the SQLite file at `path` (a target the copy made) if it holds no pet and no key: a copy that
 * failed before its first chunk. One holding chunks is kept: a re-run completes it.
 */
export function discardIfEmpty(path: string): boolean {
  let empty = false
  try {
    const db = new DatabaseSync(path, { readOnly: true })
    try {
      const tables = db.prepare(
        "SELECT name FROM sqlite_schema WHERE type = 'table' AND name IN ('pets', 'api_keys')",
      )
      empty = tables
        .all()
        .every(({ name }) => db.prepare(`SELECT 1 FROM ${name} LIMIT 1`).get() === undefined)
    } finally {
      db.close()
    }
  } catch {
    // Not readable as a database: left as it is, for whoever looks at it.
  }
  if (empty) removeWithCompanions(path)
  return empty
}
