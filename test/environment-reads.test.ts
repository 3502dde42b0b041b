import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'

const SRC = fileURLToPath(new URL('../src/', import.meta.url))

// `process.env.X`, `process.env[…]`, `process['env']`, `const { env } = process`, or node:process's `env`.
const READS_ENV =
  /\bprocess\s*(?:\.\s*env\b|\[\s*['"`]env['"`]\s*\])|\{[^}]*\benv\b[^}]*\}\s*(?:=\s*process\b|from\s+['"](?:node:)?process['"])/

describe('where the environment is read', () => {
  test('when a file reads the environment, then it is under cli/ (the process): everything else is handed the values', () => {
    const files = readdirSync(SRC, { recursive: true, encoding: 'utf8' }).filter((file) =>
      file.endsWith('.ts'),
    )
    const readers = files.filter((file) => READS_ENV.test(readFileSync(join(SRC, file), 'utf8')))
    assert.deepEqual(
      readers.filter((file) => !file.startsWith('cli/')),
      [],
    )
    assert.ok(readers.includes('cli/start-up.ts'), 'cli/start-up.ts reads it')
  })

  test('when the environment is read in any of its forms, then the check sees it', () => {
    for (const source of [
      'const port = process.env.PORT',
      "const port = process.env['PORT']",
      "const all = process['env']",
      'const { env } = process',
      "import { env } from 'node:process'",
      "import { argv, env } from 'process'",
    ])
      assert.match(source, READS_ENV, source)
    assert.doesNotMatch('const environment = settings.env', READS_ENV)
  })
})
