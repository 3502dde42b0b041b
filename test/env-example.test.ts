import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { parseEnv } from 'node:util'
import { loadConfig } from '../src/config.ts'
import { ConfigSchema } from '../src/config-schema.ts'
import { readEnvironment } from '../src/environment-file.ts'

const EXAMPLE = fileURLToPath(new URL('../.env.example', import.meta.url))
const text = readFileSync(EXAMPLE, 'utf8')
const listed = parseEnv(text)
const settings = ConfigSchema.properties as Record<string, { default?: unknown; description?: string }>

describe('.env.example', () => {
  test('when a setting is added to or removed from the schema, then .env.example lists exactly the settings there are', () => {
    const names = Object.keys(settings)
    assert.deepEqual(
      names.filter((name) => !(name in listed)),
      [],
      'settings missing from .env.example',
    )
    assert.deepEqual(
      Object.keys(listed).filter((name) => !(name in settings)),
      [],
      'names in .env.example that are no setting',
    )
  })

  test("when it is read, then each setting is at its default, under a comment that is the setting's description", () => {
    const lines = text.split('\n')
    for (const [name, schema] of Object.entries(settings)) {
      assert.equal(listed[name], String(schema.default ?? ''), `${name} is listed at its default`)
      const at = lines.findIndex((line) => line.startsWith(`${name}=`))
      // The schema's description, as plain text: the README's table and --help say the same.
      assert.equal(lines[at - 1], `# ${schema.description?.replaceAll('`', '')}`, `${name}'s comment`)
    }
    assert.deepEqual(loadConfig(readEnvironment(EXAMPLE, {}).environment), loadConfig({}))
  })
})
