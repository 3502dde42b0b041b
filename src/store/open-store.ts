import { existsSync, mkdirSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import type { Logger } from 'pino'
import { type Config, ConfigError, DEFAULT_DATABASE_URL } from '../config.ts'
import { SqliteStore } from './sqlite/sqlite-store.ts'
import type { Store } from './store.ts'

const SQLITE = 'sqlite:'

/**
 * The one place an engine is chosen, from `DATABASE_URL`; everything else sees only `Store`. The
 * PostgreSQL engine and its driver are loaded only when chosen, so an embedded deployment does not
 * carry them (about 2 MiB of heap).
 */
export async function openStore(
  config: Config,
  log: Pick<Logger, 'warn' | 'error' | 'info'>,
): Promise<Store> {
  const path = sqlitePath(config)
  const maxBatch = config.WRITE_BATCH_MAX
  if (path !== undefined) {
    prepareDirectory(config)
    return new SqliteStore({
      path,
      busyTimeoutMs: config.SQLITE_BUSY_TIMEOUT_MS,
      maxBatch,
      writeThread: config.SQLITE_WRITE_THREAD === 'on',
      log,
    })
  }
  const { PostgresStore } = await import('./postgres/postgres-store.ts')
  return new PostgresStore({
    maxBatch,
    url: config.DATABASE_URL,
    poolSize: config.PG_POOL_SIZE,
    statementTimeoutMs: config.PG_STATEMENT_TIMEOUT_MS,
    connectTimeoutMs: config.PG_CONNECT_TIMEOUT_MS,
    onIdleError: (error) =>
      // Without the stack: when the server goes down, every pooled connection reports the same thing.
      log.warn({ error: error.message }, 'an idle database connection failed; it will be replaced'),
  })
}

/**
 * The default `data/` is created on the first start; any other directory must exist, so a mistyped path is
 * refused rather than given a new empty database (and a new initial key) somewhere unexpected.
 */
function prepareDirectory(config: Config): void {
  const directory = embeddedDataDirectory(config)
  if (directory === undefined || existsSync(directory)) return
  if (config.DATABASE_URL === DEFAULT_DATABASE_URL) {
    mkdirSync(directory)
    return
  }
  throw new ConfigError(
    `DATABASE_URL names a file in ${resolve(directory)}, a directory that does not exist (create it first, or correct the path)`,
  )
}

/** The embedded database's path (a file, or `:memory:`), if the store is SQLite. */
function sqlitePath(config: Config): string | undefined {
  return config.DATABASE_URL.startsWith(SQLITE) ? config.DATABASE_URL.slice(SQLITE.length) : undefined
}

/** The directory holding the embedded database file, if there is one. */
export function embeddedDataDirectory(config: Config): string | undefined {
  const path = sqlitePath(config)
  return path === undefined || path === ':memory:' ? undefined : dirname(path)
}
