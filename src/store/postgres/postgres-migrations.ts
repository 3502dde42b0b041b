/**
 * Versioned schema changes for PostgreSQL, applied in order and never edited once released. Every
 * integer is `bigint`, so ids and categories cover the whole int64 range.
 */
export const postgresMigrations: ReadonlyArray<{ version: number; name: string; sql: string }> = [
  {
    version: 1,
    name: 'pets and api keys',
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
]
