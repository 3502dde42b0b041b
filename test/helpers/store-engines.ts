import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import pg from 'pg'
import { PostgresStore } from '../../src/store/postgres/postgres-store.ts'
import { SqliteStore, type SqliteStoreOptions } from '../../src/store/sqlite/sqlite-store.ts'
import type { Store } from '../../src/store/store.ts'
import { type Cleanup, temporaryDirectory } from './cleanup.ts'
import { postgresLack, sharedPostgres } from './postgres-server.ts'
import { type Lack, suiteNeeding } from './suite-requirements.ts'

export interface OpenedStore {
  store: Store
  /** Another store on the same data (as a restarted process or a second instance would open it). */
  reopen(): Promise<Store>
  /** The `DATABASE_URL` a service process would use for this data. */
  databaseUrl: string
  /** Runs one SQL statement on the same data, on a connection of its own (as another release would). */
  sql(text: string): Promise<Record<string, unknown>[]>
}

export interface StoreEngine {
  name: string
  /** What this engine lacks here (the suite is then reported as skipped, and fails under CI). */
  unavailable(): Lack | undefined
  /** A new, empty, migrated store, closed after the test. */
  open(t: Cleanup): Promise<OpenedStore>
}

async function opened(
  t: Cleanup,
  create: () => Store,
  databaseUrl: string,
  sql: OpenedStore['sql'],
): Promise<OpenedStore> {
  const openOne = async () => {
    const store = create()
    t.after(() => store.close())
    await store.migrate()
    return store
  }
  return { store: await openOne(), reopen: openOne, databaseUrl, sql }
}

async function sqliteSql(path: string, text: string): Promise<Record<string, unknown>[]> {
  const db = new DatabaseSync(path)
  try {
    db.exec('PRAGMA busy_timeout = 5000')
    const statement = db.prepare(text)
    if (statement.columns().length > 0) return statement.all()
    statement.run()
    return []
  } finally {
    db.close()
  }
}

/** Runs `text` on the database at `url` in a connection of its own, and resolves to its rows. */
export async function postgresSql(url: string, text: string): Promise<Record<string, unknown>[]> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return (await client.query(text)).rows
  } finally {
    await client.end()
  }
}

function sqliteEngineWith(name: string, options: Partial<SqliteStoreOptions> = {}): StoreEngine {
  return {
    name,
    unavailable: () => undefined,
    open(t) {
      const path = join(temporaryDirectory(t), 'pets.db')
      return opened(
        t,
        () => new SqliteStore({ path, busyTimeoutMs: 2000, ...options }),
        `sqlite:${path}`,
        (text) => sqliteSql(path, text),
      )
    },
  }
}

export const sqliteEngine = sqliteEngineWith('sqlite')

/** SQLite committing on a write thread of its own (`SQLITE_WRITE_THREAD=on`). */
export const sqliteWriteThreadEngine = sqliteEngineWith('sqlite, writes on a write thread', {
  writeThread: true,
})

export const postgresEngine: StoreEngine = {
  name: 'postgres',
  unavailable: postgresLack,
  async open(t) {
    const url = await (await sharedPostgres()).createDatabase()
    return opened(
      t,
      () => postgresStoreAt(url),
      url,
      (text) => postgresSql(url, text),
    )
  },
}

/** A PostgreSQL store on the database at `url`, with the tests' timeouts; the caller closes it. */
export function postgresStoreAt(url: string, poolSize = 5): PostgresStore {
  return new PostgresStore({
    url,
    poolSize,
    statementTimeoutMs: 5000,
    connectTimeoutMs: 2000,
    onIdleError: () => {},
  })
}

/** Every engine the storage contract and the HTTP suites run on. */
export const storeEngines: StoreEngine[] = [sqliteEngine, postgresEngine]

/**
 * `describe` options for an engine's suite: skipped with one line when the engine cannot run here —
 * except under CI, where a missing engine must fail the run rather than pass it silently.
 */
export function engineSuiteOptions(engine: StoreEngine): { skip?: string } {
  return suiteNeeding(`the ${engine.name} suites`, engine.unavailable())
}
