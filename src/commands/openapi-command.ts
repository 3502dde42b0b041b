import { buildApp } from '../app.ts'
import { loadConfig } from '../config.ts'
import { createLogger } from '../logger.ts'
import { openStore } from '../store/open-store.ts'
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
    const config = { ...loadConfig(), LOG_LEVEL: 'silent' as const, DATABASE_URL: 'sqlite::memory:' }
    const store = await openStore(config, createLogger(config))
    await store.migrate()
    const app = await buildApp({ config, store })
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
