import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { StoreUnavailableError } from '../../errors.ts'
import { INT64_MIN } from '../../schemas/int64.ts'
import type { NewPet, Pet } from '../../schemas/pet.ts'
import { type CreateOutcome, createOutcomes, planCreates } from '../idempotent-batch.ts'
import {
  type ClaimRow,
  claimsFromRows,
  type KeyRow,
  keyRecordFromRow,
  type PetRow,
  petFromRow,
} from '../rows.ts'
import {
  type ApiKeyRecord,
  type CreatedPet,
  type CreatePetRequest,
  type DeprecatedCallTally,
  DuplicateKeyNameError,
  type KeyIdentity,
  type MigrationReport,
  type NewApiKey,
  type PetQuery,
  type Store,
} from '../store.ts'
import { WriteBatcher } from '../write-batcher.ts'
import { postgresMigrations } from './postgres-migrations.ts'

export interface PostgresStoreOptions {
  url: string
  poolSize: number
  /** Server-side limit on one statement; the client gives up one second later if the server is silent. */
  statementTimeoutMs: number
  /** How long to wait for a connection (new or from the pool) before answering 503. */
  connectTimeoutMs: number
  /** Told about connections that fail while idle in the pool (they are replaced, never fatal). */
  onIdleError: (error: Error) => void
}

// Arbitrary, fixed keys for advisory locks: one for migrations, one that orders pet inserts.
const MIGRATION_LOCK = 0x7065_7473_0001n
const INSERT_LOCK = 0x7065_7473_0002n
const MAX_BATCH = 500
const PET_COLUMNS = 'id, name, category_id, status'
// Timestamps leave the database as ISO 8601 UTC text, the form both engines report.
const isoUtc = (column: string) =>
  `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS ${column}`
const KEY_COLUMNS = `id, name, hint, ${isoUtc('created_at')}, ${isoUtc('revoked_at')}, deprecated_calls, ${isoUtc('last_deprecated_call_at')}`

// int8 arrives as text; it becomes a bigint here, so no id or category is ever rounded.
const INT8_OID = 20
const types = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8_OID ? BigInt : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
}

/** SQLSTATE classes and codes that mean "the database cannot do this now" rather than "this is wrong". */
const UNAVAILABLE_STATES = /^(08|53|57P|58)|^57014$|^40001$|^40P01$/
const NETWORK_ERRORS = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EPIPE',
  'EAI_AGAIN',
])

function translate(error: unknown): unknown {
  const { code, message } = error as { code?: string; message?: string }
  const unavailable =
    (code !== undefined && (UNAVAILABLE_STATES.test(code) || NETWORK_ERRORS.has(code))) ||
    /timeout|terminated|Connection ended|not queryable/i.test(message ?? '')
  return unavailable ? new StoreUnavailableError('the database is unreachable', { cause: error }) : error
}

/** A key insert that hit the one-active-key-per-name index becomes the error callers expect. */
function keyNameTaken(error: unknown, name: string): unknown {
  return (error as { constraint?: string }).constraint === 'api_keys_active_name'
    ? new DuplicateKeyNameError(name)
    : error
}

/**
 * PostgreSQL engine for many stateless instances sharing one database. Creates are group-committed like
 * the embedded store's, and each batch takes a transaction-scoped advisory lock before inserting, so ids
 * become visible in ascending order across every instance: a reader that has seen id N will never later
 * find a new pet below N.
 */
export class PostgresStore implements Store {
  readonly engine = 'postgres'
  readonly #pool: pg.Pool
  readonly #creates: WriteBatcher<CreatePetRequest, CreateOutcome>
  #closed = false

  constructor(options: PostgresStoreOptions) {
    this.#pool = new pg.Pool({
      connectionString: options.url,
      max: options.poolSize,
      connectionTimeoutMillis: options.connectTimeoutMs,
      statement_timeout: options.statementTimeoutMs,
      query_timeout: options.statementTimeoutMs + 1000,
      idleTimeoutMillis: 30_000,
      application_name: 'petstore',
      types,
    })
    this.#pool.on('error', options.onIdleError)
    this.#creates = new WriteBatcher((batch) => this.#createPets(batch), MAX_BATCH)
  }

  #ensureOpen(): void {
    if (this.#closed) throw new StoreUnavailableError('the store is closed')
  }

  async #query<Row extends pg.QueryResultRow>(
    name: string,
    text: string,
    values: unknown[] = [],
  ): Promise<Row[]> {
    this.#ensureOpen()
    try {
      return (await this.#pool.query<Row>({ name, text, values })).rows
    } catch (error) {
      throw translate(error)
    }
  }

  async #transaction<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    this.#ensureOpen()
    let client: pg.PoolClient
    try {
      client = await this.#pool.connect()
    } catch (error) {
      throw translate(error)
    }
    let broken = false
    try {
      await client.query('BEGIN')
      const result = await work(client)
      await client.query('COMMIT')
      return result
    } catch (error) {
      broken = await client.query('ROLLBACK').then(
        () => false,
        () => true,
      )
      throw translate(error)
    } finally {
      client.release(broken)
    }
  }

  migrate(): Promise<MigrationReport> {
    return this.#transaction(async (client) => {
      // Instances starting together queue here; the first applies what is missing, the rest find it done.
      await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK])
      await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
        version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`)
      const rows = (await client.query<{ version: number }>('SELECT version FROM schema_migrations')).rows
      const done = new Set(rows.map((row) => row.version))
      const latest = postgresMigrations.at(-1)?.version ?? 0
      const newest = Math.max(0, ...done)
      if (newest > latest) {
        throw new Error(`database schema version ${newest} is newer than this release knows (${latest})`)
      }
      const applied: number[] = []
      for (const migration of postgresMigrations) {
        if (done.has(migration.version)) continue
        await client.query(migration.sql)
        await client.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [
          migration.version,
          migration.name,
        ])
        applied.push(migration.version)
      }
      return { applied, current: latest }
    })
  }

  async schemaStatus(): Promise<{ current: number; latest: number }> {
    const [row] = await this.#query<{ current: number | null }>(
      'schema.status',
      'SELECT max(version) AS current FROM schema_migrations',
    )
    return { current: row?.current ?? 0, latest: postgresMigrations.at(-1)?.version ?? 0 }
  }

  poolStats() {
    return { total: this.#pool.totalCount, idle: this.#pool.idleCount, waiting: this.#pool.waitingCount }
  }

  async createPet(request: CreatePetRequest): Promise<CreatedPet> {
    this.#ensureOpen()
    const outcome = await this.#creates.submit(request)
    if (outcome instanceof Error) throw outcome
    return outcome
  }

  /**
   * One transaction for the whole batch, under the insert lock: the batch's idempotency records are read,
   * the new pets inserted in one statement, and their records written, all committed together.
   */
  #createPets(requests: CreatePetRequest[]): Promise<CreateOutcome[]> {
    return this.#transaction(async (client) => {
      await client.query('SELECT pg_advisory_xact_lock($1)', [INSERT_LOCK])
      const claims = requests.flatMap(({ idempotency }) => (idempotency ? [idempotency] : []))
      const stored =
        claims.length === 0
          ? []
          : (
              await client.query<ClaimRow>({
                name: 'claims.find',
                text: `SELECT * FROM idempotency_keys WHERE (api_key_id, idempotency_key) IN
                       (SELECT * FROM unnest($1::bigint[], $2::text[]))`,
                values: [claims.map((c) => c.apiKeyId.toString()), claims.map((c) => c.key)],
              })
            ).rows
      const plans = planCreates(requests, claimsFromRows(stored))
      const toInsert = requests.filter((_, index) => plans[index]?.kind === 'insert')
      const inserted =
        toInsert.length === 0
          ? []
          : await this.#insertPets(
              client,
              toInsert.map((r) => r.pet),
            )
      const recorded = toInsert.flatMap(({ idempotency }, index) =>
        idempotency ? [{ claim: idempotency, petId: (inserted[index] as Pet).id }] : [],
      )
      if (recorded.length > 0) {
        await client.query({
          name: 'claims.record',
          text: `INSERT INTO idempotency_keys
                 SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bigint[], $5::bigint[])
                 ON CONFLICT (api_key_id, idempotency_key) DO UPDATE SET fingerprint = excluded.fingerprint,
                   pet_id = excluded.pet_id, expires_at_ms = excluded.expires_at_ms`,
          values: [
            recorded.map((r) => r.claim.apiKeyId.toString()),
            recorded.map((r) => r.claim.key),
            recorded.map((r) => r.claim.fingerprint),
            recorded.map((r) => r.petId.toString()),
            recorded.map((r) => String(r.claim.expiresAtMs)),
          ],
        })
      }
      const replayIds = plans.flatMap((plan) => (plan.kind === 'replay' ? [plan.petId.toString()] : []))
      const replayed =
        replayIds.length === 0
          ? []
          : (
              await client.query<PetRow>({
                name: 'pets.get-many',
                text: `SELECT ${PET_COLUMNS} FROM pets WHERE id = ANY($1::bigint[])`,
                values: [replayIds],
              })
            ).rows.map(petFromRow)
      return createOutcomes(plans, inserted, new Map(replayed.map((pet) => [pet.id, pet])))
    })
  }

  async #insertPets(client: pg.PoolClient, pets: NewPet[]): Promise<Pet[]> {
    const { rows } = await client.query<PetRow>({
      name: 'pets.insert',
      text: `INSERT INTO pets (name, category_id, status)
             SELECT name, category_id, status
             FROM unnest($1::text[], $2::bigint[], $3::text[]) WITH ORDINALITY AS t(name, category_id, status, n)
             ORDER BY n
             RETURNING ${PET_COLUMNS}`,
      values: [
        pets.map((p) => p.name),
        pets.map((p) => p.categoryId.toString()),
        pets.map((p) => p.status ?? null),
      ],
    })
    // Identity values follow the ORDER BY, so sorting by id restores the order of `pets`.
    return rows.sort((a, b) => (a.id < b.id ? -1 : 1)).map(petFromRow)
  }

  async getPet(id: bigint): Promise<Pet | undefined> {
    const [row] = await this.#query<PetRow>('pets.get', `SELECT ${PET_COLUMNS} FROM pets WHERE id = $1`, [id])
    return row === undefined ? undefined : petFromRow(row)
  }

  async listPets({ limit, status, afterId = INT64_MIN }: PetQuery): Promise<Pet[]> {
    // Keyset paging: `id > afterId` walks the primary key (or the (status, id) index); no OFFSET scans.
    const rows =
      status === undefined
        ? await this.#query<PetRow>(
            'pets.list',
            `SELECT ${PET_COLUMNS} FROM pets WHERE id > $1 ORDER BY id LIMIT $2`,
            [afterId, limit],
          )
        : await this.#query<PetRow>(
            'pets.list-status',
            `SELECT ${PET_COLUMNS} FROM pets WHERE status = $1 AND id > $2 ORDER BY id LIMIT $3`,
            [status, afterId, limit],
          )
    return rows.map(petFromRow)
  }

  async purgeIdempotencyKeys(nowMs: number): Promise<number> {
    const rows = await this.#query(
      'claims.purge',
      'DELETE FROM idempotency_keys WHERE expires_at_ms <= $1 RETURNING 1',
      [nowMs],
    )
    return rows.length
  }

  async serviceSecret(): Promise<string> {
    await this.#query(
      'settings.secret-init',
      "INSERT INTO service_settings VALUES ('service_secret', $1) ON CONFLICT (name) DO NOTHING",
      [randomBytes(32).toString('base64url')],
    )
    const [row] = await this.#query<{ value: string }>(
      'settings.secret',
      "SELECT value FROM service_settings WHERE name = 'service_secret'",
    )
    return (row as { value: string }).value
  }

  async createApiKey({ name, hash, hint }: NewApiKey): Promise<ApiKeyRecord> {
    const [row] = await this.#query<KeyRow>(
      'keys.create',
      `INSERT INTO api_keys (name, hash, hint) VALUES ($1, $2, $3) RETURNING ${KEY_COLUMNS}`,
      [name, hash, hint],
    ).catch((error: unknown) => Promise.reject(keyNameTaken(error, name)))
    return keyRecordFromRow(row as KeyRow)
  }

  async ensureApiKey({ name, hash, hint }: NewApiKey): Promise<void> {
    await this.#query(
      'keys.ensure',
      'INSERT INTO api_keys (name, hash, hint) VALUES ($1, $2, $3) ON CONFLICT (hash) DO NOTHING',
      [name, hash, hint],
    ).catch((error: unknown) => Promise.reject(keyNameTaken(error, name)))
  }

  async findActiveApiKey(hash: string): Promise<KeyIdentity | undefined> {
    const [row] = await this.#query<KeyIdentity>(
      'keys.find',
      'SELECT id, name FROM api_keys WHERE hash = $1 AND revoked_at IS NULL',
      [hash],
    )
    return row === undefined ? undefined : { id: row.id, name: row.name }
  }

  async listApiKeys(): Promise<ApiKeyRecord[]> {
    const rows = await this.#query<KeyRow>('keys.list', `SELECT ${KEY_COLUMNS} FROM api_keys ORDER BY id`)
    return rows.map(keyRecordFromRow)
  }

  async revokeApiKey(name: string): Promise<boolean> {
    const rows = await this.#query(
      'keys.revoke',
      'UPDATE api_keys SET revoked_at = now() WHERE name = $1 AND revoked_at IS NULL RETURNING id',
      [name],
    )
    return rows.length > 0
  }

  async recordDeprecatedCalls(tallies: DeprecatedCallTally[]): Promise<void> {
    if (tallies.length === 0) return
    await this.#query(
      'keys.deprecated-calls',
      `UPDATE api_keys SET deprecated_calls = deprecated_calls + t.calls,
         last_deprecated_call_at = GREATEST(last_deprecated_call_at, to_timestamp(t.last_ms / 1000.0))
       FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) AS t(id, calls, last_ms) WHERE api_keys.id = t.id`,
      [
        tallies.map((t) => t.apiKeyId.toString()),
        tallies.map((t) => String(t.calls)),
        tallies.map((t) => String(t.lastCallAtMs)),
      ],
    )
  }

  async close(): Promise<void> {
    if (this.#closed) return
    await this.#creates.flush()
    this.#closed = true
    await this.#pool.end()
  }
}
