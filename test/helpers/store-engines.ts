import { join } from 'node:path'
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.ts'
import type { Store } from '../../src/store/store.ts'
import { type Cleanup, temporaryDirectory } from './test-server.ts'

export interface StoreEngine {
  name: string
  /** A new, empty, migrated store; `reopen` opens another store on the same data. */
  open(t: Cleanup): Promise<{ store: Store; reopen(): Promise<Store> }>
}

export const sqliteEngine: StoreEngine = {
  name: 'sqlite',
  async open(t) {
    const path = join(temporaryDirectory(t), 'pets.db')
    const openOne = async () => {
      const store = new SqliteStore({ path, busyTimeoutMs: 2000 })
      t.after(() => store.close())
      await store.migrate()
      return store
    }
    return { store: await openOne(), reopen: openOne }
  },
}

/** Every engine the storage contract runs on. */
export const storeEngines: StoreEngine[] = [sqliteEngine]
