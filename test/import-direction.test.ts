import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'

// The direction of imports is the linter's rule (biome.json, noRestrictedImports per folder). These tests
// plant one import in a scratch copy of the rules, so they prove the rule rejects it without touching src/.
const ROOT = fileURLToPath(new URL('..', import.meta.url))
const BIOME = join(ROOT, 'node_modules', '.bin', 'biome')

let scratch: string

function lint(file: string, source: string): { status: number | null; output: string } {
  const path = join(scratch, file)
  mkdirSync(dirname(path), { recursive: true })
  writeFileSync(path, source)
  const result = spawnSync(BIOME, ['lint', '--config-path', scratch, '--max-diagnostics=5', path], {
    cwd: scratch,
    encoding: 'utf8',
    timeout: 60_000,
  })
  rmSync(path)
  return { status: result.status, output: `${result.stdout}${result.stderr}` }
}

function plant(specifier: string): string {
  return `import { planted } from '${specifier}'\n\nexport const used = planted\n`
}

describe('the direction of imports, guarded by the linter', () => {
  before(() => {
    scratch = mkdtempSync(join(tmpdir(), 'petstore-imports-'))
    // The project's rules as they are, without the git ignore file a scratch folder does not have.
    const rules = JSON.parse(readFileSync(join(ROOT, 'biome.json'), 'utf8'))
    delete rules.vcs
    writeFileSync(join(scratch, 'biome.json'), JSON.stringify(rules))
  })
  after(() => rmSync(scratch, { recursive: true, force: true }))

  const backward: Array<[file: string, specifier: string, rule: string]> = [
    ['src/http/planted.ts', '../routes/health.ts', 'http/ is plumbing that knows no pet'],
    ['src/http/planted.ts', '../pets/pet-reader.ts', 'http/ is plumbing that knows no pet'],
    ['src/http/planted.ts', '../admission/admission.ts', 'http/ is plumbing that knows no pet'],
    ['src/pets/planted.ts', '../http/request-head.ts', 'pets/ is the domain'],
    ['src/pets/planted.ts', '../config.ts', 'pets/ is the domain'],
    ['src/pets/planted.ts', 'fastify', 'pets/ is the domain'],
    ['src/store/sqlite/planted.ts', '../../pets/read-cache.ts', 'store/ may import only the port'],
    ['src/store/shared/planted.ts', '../../metrics/metrics.ts', 'store/ may import only the port'],
    ['src/schemas/planted.ts', '../store/store.ts', 'schemas/ may import only schemas/'],
    ['src/auth/planted.ts', '../http/request-head.ts', 'auth/ may import only'],
    ['src/metrics/planted.ts', '../routes/v1-api.ts', 'metrics/ may import only'],
    ['src/admission/planted.ts', '../routes/v1-api.ts', 'admission/ may not import routes/'],
    ['src/routes/pets/planted.ts', '../../cli/start-up.ts', 'routes/ may not import cli/'],
    ['src/app.ts', './config.ts', 'only cli/ imports config'],
    ['src/errors.ts', './log/logger.ts', 'errors.ts is the bottom of the house'],
  ]
  for (const [file, specifier, rule] of backward) {
    test(`when ${file} imports ${specifier}, then the linter rejects it naming the rule`, () => {
      const { status, output } = lint(file, plant(specifier))
      assert.notEqual(status, 0, output)
      assert.match(output, /noRestrictedImports/)
      assert.ok(output.includes(rule), output)
    })
  }

  const downward: Array<[file: string, specifier: string]> = [
    ['src/http/planted.ts', '../errors.ts'],
    ['src/pets/planted.ts', '../store/store.ts'],
    ['src/routes/pets/planted.ts', '../../pets/pet-reader.ts'],
    ['src/admission/planted.ts', '../pets/get-pet-deprecation.ts'],
    ['src/cli/planted.ts', '../config.ts'],
  ]
  for (const [file, specifier] of downward) {
    test(`when ${file} imports ${specifier} (downward), then the linter accepts it`, () => {
      const { status, output } = lint(file, plant(specifier))
      assert.equal(status, 0, output)
    })
  }
})
