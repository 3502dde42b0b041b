import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'

const GENERATOR = fileURLToPath(new URL('../tools/client-generator/', import.meta.url))
const COMMITTED = fileURLToPath(new URL('../packages/client/src/openapi-types.ts', import.meta.url))

/** Why the generator cannot run here, or undefined when it can. */
function generatorUnavailableReason(): string | undefined {
  const installed = ['openapi-typescript', 'typescript'].every((name) =>
    existsSync(`${GENERATOR}node_modules/${name}/package.json`),
  )
  return installed
    ? undefined
    : 'the client generator is not installed (npm ci --prefix tools/client-generator)'
}

/** `describe` options: skipped with the reason when the generator is missing, except under CI, where that fails. */
function generatorSuiteOptions(): { skip?: string } {
  const reason = generatorUnavailableReason()
  if (reason === undefined) return {}
  if (process.env.CI === 'true') throw new Error(`CI must check the generated client: ${reason}`)
  return { skip: reason }
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
