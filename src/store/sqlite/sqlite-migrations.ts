import type { Migration } from '../shared/migration-plan.ts'

/** The current time as SQLite writes it in every timestamp column: ISO 8601, UTC, milliseconds. */
export const NOW = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')"

/**
 * Versioned schema changes, applied in order and never edited once released: a change to the schema is a
 * new entry. STRICT tables make SQLite refuse a value of the wrong type instead of storing it.
 */
export const sqliteMigrations: readonly Migration[] = [
  {
    version: 1,
    name: 'pets and api keys',
    compatibleFrom: 1,
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
  {
    version: 2,
    name: 'idempotency keys, deprecated-call counts, service secret',
    // The first release was made for schema 2: none for 1 exists to run on it.
    compatibleFrom: 2,
    sql: `
      ALTER TABLE api_keys ADD COLUMN deprecated_calls INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE api_keys ADD COLUMN last_deprecated_call_at TEXT;
      CREATE TABLE idempotency_keys (
        api_key_id INTEGER NOT NULL,
        idempotency_key TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        pet_id INTEGER NOT NULL,
        expires_at_ms INTEGER NOT NULL,
        PRIMARY KEY (api_key_id, idempotency_key)
      ) STRICT, WITHOUT ROWID;
      CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at_ms);
      CREATE TABLE service_settings (name TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT;
    `,
  },
]
