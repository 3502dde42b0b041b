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
      const unknown = Object.keys(settings).filter((name) => !(name in ConfigSchema.properties))
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
      assert.match(settings.DATABASE_URL ?? '', /^postgres:\/\//)
      assert.match(settings.REDIS_URL ?? '', /^redis:\/\//)
      assert.equal(settings.API_KEYS, '', 'keys come from keys create or the pipeline, never from this file')
    }
    assert.notEqual(production.DATABASE_URL, staging.DATABASE_URL)
    assert.notEqual(production.REDIS_URL, staging.REDIS_URL)
  })
})
