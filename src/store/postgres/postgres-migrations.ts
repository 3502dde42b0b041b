import type { Migration } from '../shared/migration-plan.ts'

/**
 * Versioned schema changes for PostgreSQL, applied in order and never edited once released. Every
 * integer is `bigint`, so ids and categories cover the whole int64 range.
 */
export const postgresMigrations: readonly Migration[] = [
  {
    version: 1,
    name: 'pets and api keys',
    compatibleFrom: 1,
    sql: `
      CREATE TABLE pets (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        name text NOT NULL,
        category_id bigint NOT NULL,
        status text CHECK (status IN ('available', 'pending', 'sold')),
        created_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX pets_status_id ON pets (status, id);
      CREATE TABLE api_keys (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        name text NOT NULL,
        hash text NOT NULL UNIQUE,
        hint text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        revoked_at timestamptz
      );
      CREATE UNIQUE INDEX api_keys_active_name ON api_keys (name) WHERE revoked_at IS NULL;
    `,
  },
  {
    version: 2,
    name: 'idempotency keys, deprecated-call counts, service secret',
    // The first release was made for schema 2: none for 1 exists to run on it.
    compatibleFrom: 2,
    sql: `
      ALTER TABLE api_keys ADD COLUMN deprecated_calls bigint NOT NULL DEFAULT 0;
      ALTER TABLE api_keys ADD COLUMN last_deprecated_call_at timestamptz;
      CREATE TABLE idempotency_keys (
        api_key_id bigint NOT NULL,
        idempotency_key text NOT NULL,
        fingerprint text NOT NULL,
        pet_id bigint NOT NULL,
        expires_at_ms bigint NOT NULL,
        PRIMARY KEY (api_key_id, idempotency_key)
      );
      CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at_ms);
      CREATE TABLE service_settings (name text PRIMARY KEY, value text NOT NULL);
    `,
  },
]
