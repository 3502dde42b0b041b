import { buildApp } from '../app.ts'
import { loadConfig } from '../config.ts'
import { createLogger } from '../log/logger.ts'
import { createMetrics } from '../metrics/metrics.ts'
import { SqliteStore } from '../store/sqlite/sqlite-store.ts'
import { appOptions } from './app-options.ts'
import { type Command, parseCommandArgs } from './command.ts'

export const openapiCommand: Command = {
  name: 'openapi',
  summary: 'Print the OpenAPI 3.1 document',
  help: `Usage: petstore openapi

Prints the OpenAPI document the server serves at /v1/openapi.json, with the servers from the current
configuration (PUBLIC_BASE_URL, PRODUCTION_BASE_URL, STAGING_BASE_URL). Touches no database.`,
  async run(args, { stdout }) {
    parseCommandArgs(args, {})
    // The document comes from the routes, so the real app is built — on a throwaway in-memory store.
    const store = new SqliteStore({ path: ':memory:', busyTimeoutMs: 0 })
    await store.migrate()
    const services = { store, logger: createLogger({ level: 'silent' }), metrics: createMetrics() }
    const app = await buildApp(appOptions(loadConfig(), services))
    try {
      await app.ready()
      stdout.write(`${JSON.stringify(app.swagger(), null, 2)}\n`)
      return 0
    } finally {
      await app.close()
      await store.close()
    }
  },
}
