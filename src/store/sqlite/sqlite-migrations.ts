/** The current time as SQLite writes it in every timestamp column: ISO 8601, UTC, milliseconds. */
export const NOW = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')"

/**
 * Versioned schema changes, applied in order and never edited once released: a change to the schema is a
 * new entry. STRICT tables make SQLite refuse a value of the wrong type instead of storing it.
 */
export const sqliteMigrations: ReadonlyArray<{ version: number; name: string; sql: string }> = [
  {
    version: 1,
    name: 'pets and api keys',
    sql: `
      CREATE TABLE pets (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        name TEXT NOT NULL,
        category_id INTEGER NOT NULL,
        status TEXT CHECK (status IN ('available', 'pending', 'sold')),
        created_at TEXT NOT NULL DEFAULT (${NOW})
      ) STRICT;
      CREATE INDEX pets_status_id ON pets (status, id);
      CREATE TABLE api_keys (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        name TEXT NOT NULL,
        hash TEXT NOT NULL UNIQUE,
        hint TEXT NOT NULL,
        created_at TEXT NOT NULL DEFAULT (${NOW}),
        revoked_at TEXT
      ) STRICT;
      CREATE UNIQUE INDEX api_keys_active_name ON api_keys (name) WHERE revoked_at IS NULL;
    `,
  },
]
