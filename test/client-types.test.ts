import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { suiteNeeding } from './helpers/suite-requirements.ts'

const GENERATOR = fileURLToPath(new URL('../tools/client-generator/', import.meta.url))
const COMMITTED = fileURLToPath(new URL('../packages/client/src/openapi-types.ts', import.meta.url))

/** Whether the generator's own packages are installed: openapi-typescript and the TypeScript 5 it needs. */
function generatorInstalled(): boolean {
  const fromGenerator = createRequire(`${GENERATOR}package.json`)
  try {
    fromGenerator.resolve('openapi-typescript/package.json')
    return fromGenerator('typescript/package.json').version.startsWith('5.')
  } catch {
    return false
  }
}

/** `describe` options: skipped with one line when the generator is missing, except under CI, where that fails. */
function generatorSuiteOptions(): { skip?: string } {
  return suiteNeeding(
    'the generated client check',
    generatorInstalled()
      ? undefined
      : {
          missing: "the client generator's packages (openapi-typescript, TypeScript 5) are not installed",
          remedy: 'npm install',
        },
  )
}

describe('generated client types', generatorSuiteOptions(), () => {
  test('when the generator runs on the current OpenAPI document, then it writes exactly the committed file', () => {
    const generated = spawnSync(process.execPath, [`${GENERATOR}generate.ts`, '--stdout'], {
      encoding: 'utf8',
      env: { ...process.env, LOG_LEVEL: 'silent' },
    })
    assert.equal(generated.status, 0, generated.stderr)
    assert.ok(
      generated.stdout === readFileSync(COMMITTED, 'utf8'),
      'packages/client/src/openapi-types.ts is out of date with the OpenAPI document: run `npm run client:generate`',
    )
  })

  test('when the generator is type-checked with its own TypeScript 5, then it has no errors', () => {
    const checked = spawnSync(
      process.execPath,
      [`${GENERATOR}node_modules/typescript/bin/tsc`, '-p', GENERATOR],
      {
        encoding: 'utf8',
      },
    )
    assert.equal(checked.status, 0, checked.stdout + checked.stderr)
  })
})
