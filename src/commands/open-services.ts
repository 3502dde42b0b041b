import { loadConfig } from '../config.ts'
import { createLogger } from '../logger.ts'
import { openStore } from '../store/open-store.ts'

/** Config, logger and the configured store, for commands; the caller closes the store. */
export async function openConfiguredStore() {
  const config = loadConfig()
  const logger = createLogger(config)
  return { config, logger, store: await openStore(config, logger) }
}

/** The same, with migrations applied (so a command works on a fresh database). */
export async function openMigratedStore() {
  const opened = await openConfiguredStore()
  try {
    const report = await opened.store.migrate()
    return { ...opened, report }
  } catch (error) {
    await opened.store.close()
    throw error
  }
}
