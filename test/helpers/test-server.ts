import type { FastifyInstance } from 'fastify'
import { generateApiKey, storedFormOf } from '../../src/auth/api-key.ts'
import { type AppServices, composeApp } from '../../src/cli/compose-app.ts'
import { type Config, loadConfig } from '../../src/config.ts'
import { createLogger } from '../../src/log/logger.ts'
import type { Store } from '../../src/store/store.ts'
import type { Cleanup } from './cleanup.ts'
import { type StoreEngine, sqliteEngine } from './store-engines.ts'

export { type Cleanup, suiteCleanup, temporaryDirectory } from './cleanup.ts'

export interface TestServer {
  app: FastifyInstance
  store: Store
  config: Config
  /** `http://127.0.0.1:<port>`: the app listens on a real loopback socket. */
  origin: string
  /** An active key named "test". */
  key: string
  /** Where the data lives (`sqlite:<file>` or `postgres://…`), when the server opened its own store. */
  databaseUrl?: string
}

/**
 * The settings of an in-process server. Delay shedding is off unless the test sets MAX_EVENT_LOOP_DELAY_MS:
 * the test's own client runs on the server's loop, so the delay would measure the test, not the service.
 */
export function testConfig(env: Record<string, string> = {}): Config {
  return loadConfig({
    LOG_LEVEL: 'silent',
    PORT: '0',
    HOST: '127.0.0.1',
    MAX_EVENT_LOOP_DELAY_MS: '0',
    ...env,
  })
}

/**
 * The real app on a real store (a new SQLite file by default, or a new database of `engine`), listening on
 * a free loopback port, with one active key. Closed (app, then store) after the test.
 */
export async function startTestServer(
  t: Cleanup,
  options: {
    env?: Record<string, string>
    store?: Store
    engine?: StoreEngine
    /** An existing key to use (another instance on the same data made it); else a key "test" is created. */
    key?: string
    /** Given to the app as they are (clock, Redis, metrics, logger); by default made as `serve` makes them. */
    app?: Partial<Pick<AppServices, 'now' | 'redis' | 'metrics' | 'logger'>>
    /** Called with the app before it listens: hooks of the test's own (a stall as it gets ready). */
    prepare?: (app: FastifyInstance) => void
  } = {},
): Promise<TestServer> {
  const config = testConfig(options.env)
  // The app closes before its store (it writes its last counts as it closes), so cleanups are collected here.
  const storeCleanups: Array<() => unknown> = []
  t.after(async () => {
    await app?.close()
    for (const cleanup of storeCleanups) await cleanup()
  })
  let app: FastifyInstance | undefined
  let store = options.store
  let databaseUrl: string | undefined
  if (store === undefined) {
    const collect = { after: (fn: () => unknown) => void storeCleanups.push(fn) } as Cleanup
    const opened = await (options.engine ?? sqliteEngine).open(collect)
    store = opened.store
    databaseUrl = opened.databaseUrl
  } else {
    const given = store
    storeCleanups.push(() => given.close())
    await store.migrate()
  }
  const key = options.key ?? generateApiKey()
  if (options.key === undefined) await store.createApiKey(storedFormOf('test', key))
  app = (await composeApp(config, { store, logger: createLogger(config.log), ...options.app })).app
  options.prepare?.(app)
  await app.listen({ host: '127.0.0.1', port: 0 })
  const address = app.server.address()
  const port = typeof address === 'object' && address !== null ? address.port : 0
  return { app, store, config, origin: `http://127.0.0.1:${port}`, key, databaseUrl }
}
