import { buildApp } from '../app.ts'
import { provisionKeys } from '../auth/provision-keys.ts'
import { startServer } from '../server.ts'
import { embeddedDataDirectory } from '../store/open-store.ts'
import { type Command, parseCommandArgs } from './command.ts'
import { openConfiguredStore } from './open-services.ts'

export const serveCommand: Command = {
  name: 'serve',
  summary: 'Serve the API (the default command)',
  help: `Usage: petstore serve

Applies pending migrations, makes sure an API key exists (see README, "API keys"), and serves the API
under /v1 on HOST:PORT. Settings come from the environment and from .env; see README, "Configuration".
SIGTERM or SIGINT drains in-flight requests, closes the store and exits 0.`,
  async run(args, { stdout }) {
    parseCommandArgs(args, {})
    const { config, logger, store } = openConfiguredStore()
    try {
      await store.migrate()
      const app = await buildApp({ config, store, logger })
      await provisionKeys({
        store,
        config,
        log: app.log,
        dataDirectory: embeddedDataDirectory(config),
        terminal: stdout,
      })
      const server = await startServer(app, config, () => store.close())
      app.log.info(`serving ${server.url}/v1 (OpenAPI document: ${server.url}/v1/openapi.json)`)
      return 0
    } catch (error) {
      await store.close()
      throw error
    }
  },
}
