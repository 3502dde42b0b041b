import { loadConfig } from '../config.ts'
import { openStore } from '../store/open-store.ts'

/** Config and a migrated store, for commands that work on the data; the caller closes the store. */
export async function openMigratedStore() {
  const config = loadConfig()
  const store = openStore(config)
  const report = await store.migrate()
  return { config, store, report }
}
