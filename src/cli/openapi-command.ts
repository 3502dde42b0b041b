import type { Command } from './command.ts'
import { parseCommandArgs } from './command-args.ts'
import { composeApp } from './compose-app.ts'
import { openThrowawayStore } from './open-store.ts'
import { startUp } from './start-up.ts'

export const openapiCommand: Command = {
  help: `Usage: petstore openapi

Prints the OpenAPI document the server serves at /v1/openapi.json, with the servers from the current
configuration (PUBLIC_BASE_URL, PRODUCTION_BASE_URL, STAGING_BASE_URL). Touches no database.`,
  async run(args, { stdout }) {
    parseCommandArgs(args, {})
    const { config, log } = startUp(undefined, { silent: true })
    // The document comes from the routes, so the real app is built — on a throwaway in-memory store.
    const store = await openThrowawayStore()
    try {
      const { app } = await composeApp(config, { store, logger: log })
      try {
        await app.ready()
        stdout.write(`${JSON.stringify(app.swagger(), null, 2)}\n`)
        return 0
      } finally {
        await app.close()
      }
    } finally {
      await store.close()
    }
  },
}
