import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, test } from 'node:test'
import { parseEnv } from 'node:util'
import { loadConfig } from '../src/config.ts'
import { ConfigSchema } from '../src/config-schema.ts'

const read = (name: string) => parseEnv(readFileSync(new URL(`../deploy/${name}`, import.meta.url), 'utf8'))
const production = read('production.env')
const staging = read('staging.env')

describe('deploy/production.env and deploy/staging.env', () => {
  test('when either is loaded, then every name in it is a setting and the service accepts every value', () => {
    for (const [file, settings] of Object.entries({ production, staging })) {
      // Node's own, read from the environment as it starts: the CA that signed Redis's certificate.
      const unknown = Object.keys(settings).filter(
        (name) => !(name in ConfigSchema.properties) && name !== 'NODE_EXTRA_CA_CERTS',
      )
      assert.deepEqual(unknown, [], `${file}.env names no unknown setting`)
      assert.doesNotThrow(() => loadConfig(settings), `${file}.env is a valid configuration`)
    }
  })

  test('when they are compared, then they differ in base URL, log level, database and Redis, and neither holds a key', () => {
    // Each is reached at its own URL, and both list the same two in the OpenAPI document's servers.
    assert.equal(production.PUBLIC_BASE_URL, production.PRODUCTION_BASE_URL)
    assert.equal(staging.PUBLIC_BASE_URL, staging.STAGING_BASE_URL)
    assert.notEqual(production.PUBLIC_BASE_URL, staging.PUBLIC_BASE_URL)
    for (const name of ['PRODUCTION_BASE_URL', 'STAGING_BASE_URL'])
      assert.equal(production[name], staging[name], name)
    assert.deepEqual([production.LOG_LEVEL, staging.LOG_LEVEL], ['info', 'debug'])
    for (const settings of [production, staging]) {
      // Over a network, both over TLS with the server's certificate checked (test/tls-connections.test.ts).
      const database = new URL(settings.DATABASE_URL ?? '')
      assert.equal(database.protocol, 'postgres:')
      assert.equal(database.searchParams.get('sslmode'), 'verify-full')
      assert.equal(database.searchParams.get('sslrootcert'), settings.NODE_EXTRA_CA_CERTS)
      assert.match(settings.REDIS_URL ?? '', /^rediss:\/\//)
      assert.equal(settings.API_KEYS, '', 'keys come from keys create or the pipeline, never from this file')
    }
    assert.notEqual(production.DATABASE_URL, staging.DATABASE_URL)
    assert.notEqual(production.REDIS_URL, staging.REDIS_URL)
  })

  test('when either runs behind its balancer, then a stop serves on while the balancer takes the instance out, and idle connections outlive a 60 s balancer idle timeout', () => {
    for (const [file, settings] of Object.entries({ production, staging })) {
      const { server, http } = loadConfig(settings)
      assert.equal(server.host, '0.0.0.0', `${file}.env listens for the balancer`)
      // README, "Behind a proxy": refused new connections, then 502s from connections closed under it.
      assert.ok(server.shutdownDelayMs >= 5000, `${file}.env: SHUTDOWN_DELAY_MS ${server.shutdownDelayMs}`)
      assert.ok(
        http.keepAliveTimeoutMs > 60_000,
        `${file}.env: KEEP_ALIVE_TIMEOUT_MS ${http.keepAliveTimeoutMs}`,
      )
      // The drain waits for an idle connection until its keep-alive timeout and 1 s.
      assert.ok(
        server.shutdownTimeoutMs > http.keepAliveTimeoutMs + 1000,
        `${file}.env: SHUTDOWN_TIMEOUT_MS ${server.shutdownTimeoutMs}`,
      )
    }
  })
})
