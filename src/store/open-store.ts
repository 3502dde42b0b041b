import type { Config } from '../config.ts'
import { SqliteStore } from './sqlite/sqlite-store.ts'
import type { Store } from './store.ts'

/** The one place an engine is chosen, from `DATABASE_URL`; everything else sees only `Store`. */
export function openStore(config: Config): Store {
  const sqlitePath = config.DATABASE_URL.slice('sqlite:'.length)
  return new SqliteStore({ path: sqlitePath, busyTimeoutMs: config.SQLITE_BUSY_TIMEOUT_MS })
}

/** The directory holding the embedded database file, if the store is one. */
export function embeddedDataDirectory(config: Config): string | undefined {
  if (!config.DATABASE_URL.startsWith('sqlite:') || config.DATABASE_URL === 'sqlite::memory:')
    return undefined
  const path = config.DATABASE_URL.slice('sqlite:'.length)
  const slash = path.lastIndexOf('/')
  return slash === -1 ? '.' : path.slice(0, slash) || '/'
}
