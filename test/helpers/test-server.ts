import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, type TestContext } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../../src/app.ts'
import { apiKeyHint, generateApiKey, hashApiKey } from '../../src/auth/api-key.ts'
import { type Config, loadConfig } from '../../src/config.ts'
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.ts'
import type { Store } from '../../src/store/store.ts'

export interface TestServer {
  app: FastifyInstance
  store: Store
  config: Config
  /** `http://127.0.0.1:<port>`: the app listens on a real loopback socket. */
  origin: string
  /** An active key named "test". */
  key: string
  /** The SQLite file, when the server made its own store. */
  databasePath?: string
}

/** Where cleanups go: a test's context, or `{ after }` from node:test for a whole suite. */
export type Cleanup = Pick<TestContext, 'after'>

/**
 * Cleanups for resources shared by a whole `describe` block: call it in the block's body (not in a hook),
 * and the collected cleanups run, last first, when the block ends.
 */
export function suiteCleanup(): Cleanup {
  const cleanups: Array<() => unknown> = []
  after(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup()
  })
  return { after: (fn: () => unknown) => void cleanups.push(fn) } as Cleanup
}

/** A fresh temporary directory, removed after the test. */
export function temporaryDirectory(t: Cleanup): string {
  const directory = mkdtempSync(join(tmpdir(), 'petstore-test-'))
  t.after(() => rmSync(directory, { recursive: true, force: true }))
  return directory
}

export function testConfig(env: Record<string, string> = {}): Config {
  return loadConfig({ LOG_LEVEL: 'silent', PORT: '0', HOST: '127.0.0.1', ...env })
}

/**
 * The real app on a real SQLite file in a temporary directory, listening on a free loopback port, with one
 * active key. Closed (app, then store) after the test.
 */
export async function startTestServer(
  t: Cleanup,
  options: { env?: Record<string, string>; store?: Store } = {},
): Promise<TestServer> {
  const config = testConfig(options.env)
  const databasePath = options.store ? undefined : join(temporaryDirectory(t), 'pets.db')
  const store = options.store ?? new SqliteStore({ path: databasePath as string, busyTimeoutMs: 2000 })
  await store.migrate()
  const key = generateApiKey()
  await store.createApiKey({ name: 'test', hash: hashApiKey(key), hint: apiKeyHint(key) })
  const app = await buildApp({ config, store })
  t.after(async () => {
    await app.close()
    await store.close()
  })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const address = app.server.address()
  const port = typeof address === 'object' && address !== null ? address.port : 0
  return { app, store, config, origin: `http://127.0.0.1:${port}`, key, databasePath }
}
