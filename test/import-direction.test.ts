import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, relative } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'

// The direction of imports is the linter's rule (biome.json, noRestrictedImports per room). These tests
// plant imports in a scratch copy of the rules, so they prove what the rules refuse without touching src/.
const ROOT = fileURLToPath(new URL('..', import.meta.url))
const BIOME = join(ROOT, 'node_modules', '.bin', 'biome')

interface Diagnostic {
  category: string
  message: string
  location: { path: string }
}

let scratch: string

function plant(specifier: string): string {
  return `import { planted } from '${specifier}'\n\nexport const used = planted\n`
}

/** Lints the planted files (path → source) in one run and gives each path its diagnostics. */
function lint(files: ReadonlyMap<string, string>): Map<string, Diagnostic[]> {
  rmSync(join(scratch, 'src'), { recursive: true, force: true })
  for (const [file, source] of files) {
    mkdirSync(dirname(join(scratch, file)), { recursive: true })
    writeFileSync(join(scratch, file), source)
  }
  const result = spawnSync(
    BIOME,
    ['lint', '--config-path', scratch, '--reporter=json', '--max-diagnostics=none', 'src'],
    { cwd: scratch, encoding: 'utf8', timeout: 60_000 },
  )
  const start = result.stdout.indexOf('{')
  assert.ok(start >= 0, `biome gave no report:\n${result.stdout}${result.stderr}`)
  const { diagnostics } = JSON.parse(result.stdout.slice(start)) as { diagnostics: Diagnostic[] }
  const byFile = new Map<string, Diagnostic[]>([...files.keys()].map((file) => [file, []]))
  for (const diagnostic of diagnostics) byFile.get(diagnostic.location.path)?.push(diagnostic)
  return byFile
}

/** Each planted import's diagnostics; a file planted twice goes in a later run (one source per path). */
function lintEach(plants: ReadonlyArray<readonly [file: string, specifier: string]>): Diagnostic[][] {
  const outcomes: Diagnostic[][] = []
  const pending = plants.map(([file, specifier], index) => ({ file, specifier, index }))
  while (pending.length > 0) {
    const round = new Map<string, (typeof pending)[number]>()
    for (const plantHere of pending) if (!round.has(plantHere.file)) round.set(plantHere.file, plantHere)
    const results = lint(new Map([...round].map(([file, { specifier }]) => [file, plant(specifier)])))
    for (const [file, { index }] of round) {
      outcomes[index] = results.get(file) ?? []
      pending.splice(
        pending.findIndex((candidate) => candidate.index === index),
        1,
      )
    }
  }
  return outcomes
}

const refusals = (diagnostics: Diagnostic[]) =>
  diagnostics.filter((diagnostic) => diagnostic.category === 'lint/style/noRestrictedImports')

// [the importing file, what it imports, words of the rule that must refuse it]
const backward: Array<[file: string, specifier: string, rule: string]> = [
  ['src/config.ts', './cli/run-cli.ts', 'config decodes settings'],
  ['src/config.ts', './auth/api-key.ts', 'config decodes settings'],
  ['src/config.ts', './store/store.ts', 'config decodes settings'],
  ['src/config-schema.ts', './cli/command.ts', 'config decodes settings'],
  ['src/config-schema.ts', './auth/api-key.ts', 'config decodes settings'],
  ['src/setting-forms.ts', './auth/api-key.ts', 'config decodes settings'],
  ['src/app.ts', './config.ts', 'app.ts builds the app'],
  ['src/app.ts', './cli/compose-app.ts', 'app.ts builds the app'],
  ['src/app.ts', './store/sqlite/sqlite-store.ts', 'app.ts builds the app'],
  ['src/server.ts', './app.ts', 'server.ts listens'],
  ['src/routes/pets/planted.ts', '../../cli/start-up.ts', 'routes/ may import only'],
  ['src/routes/planted.ts', '../app.ts', 'routes/ may import only'],
  ['src/routes/planted.ts', '../store/postgres/postgres-store.ts', 'routes/ may import only'],
  ['src/routes/openapi/planted.ts', '../../store/sqlite/sqlite-store.ts', 'routes/ may import only'],
  ['src/admission/planted.ts', '../routes/v1-api.ts', 'admission/ may import only'],
  ['src/admission/rate-limit/planted.ts', '../../routes/v1-api.ts', 'admission/ may import only'],
  ['src/admission/rate-limit/planted.ts', '../../store/shared/rows.ts', 'admission/ may import only'],
  ['src/http/planted.ts', '../routes/health.ts', 'http/ is plumbing that knows no pet'],
  ['src/http/planted.ts', '../pets/pet-reader.ts', 'http/ is plumbing that knows no pet'],
  ['src/http/planted.ts', '../admission/admission.ts', 'http/ is plumbing that knows no pet'],
  ['src/http/planted.ts', '../auth/api-key.ts', 'http/ is plumbing that knows no pet'],
  ['src/http/planted.ts', '../store/store.ts', 'http/ is plumbing that knows no pet'],
  ['src/pets/planted.ts', '../http/request-head.ts', 'pets/ is the domain'],
  ['src/pets/planted.ts', '../config.ts', 'pets/ is the domain'],
  ['src/pets/planted.ts', 'fastify', 'pets/ is the domain'],
  ['src/pets/planted.ts', '../store/shared/idempotent-batch.ts', 'pets/ is the domain'],
  ['src/pets/planted.ts', '../store/sqlite/sqlite-store.ts', 'pets/ is the domain'],
  ['src/pets/planted.ts', '../log/logger.ts', 'pets/ is the domain'],
  ['src/auth/planted.ts', '../http/request-head.ts', 'auth/ may import only'],
  ['src/auth/planted.ts', '../periodic-job.ts', 'auth/ may import only'],
  ['src/metrics/planted.ts', '../routes/v1-api.ts', 'metrics/ may import only'],
  ['src/metrics/planted.ts', '../http/access-line.ts', 'metrics/ may import only'],
  ['src/log/planted.ts', '../auth/api-key.ts', 'log/ may import only'],
  ['src/log/planted.ts', '../config.ts', 'log/ may import only'],
  ['src/store/store.ts', './sqlite/sqlite-store.ts', 'store/ at its top is the port'],
  ['src/store/store.ts', './shared/rows.ts', 'store/ at its top is the port'],
  ['src/store/shared/planted.ts', '../../metrics/metrics.ts', 'store/shared/ may import only'],
  ['src/store/shared/planted.ts', '../../log/log-output.ts', 'store/shared/ may import only'],
  ['src/store/shared/planted.ts', '../sqlite/sqlite-store.ts', 'never an engine'],
  ['src/store/sqlite/planted.ts', '../../pets/read-cache.ts', 'An engine (store/sqlite/, store/postgres/)'],
  ['src/store/sqlite/planted.ts', '../../log/log-output.ts', 'An engine (store/sqlite/, store/postgres/)'],
  ['src/store/sqlite/planted.ts', '../../a-new-root-file.ts', 'An engine (store/sqlite/, store/postgres/)'],
  ['src/store/sqlite/planted.ts', '../postgres/postgres-store.ts', 'never the other engine'],
  ['src/store/postgres/planted.ts', '../sqlite/sqlite-connection.ts', 'never the other engine'],
  ['src/schemas/planted.ts', '../store/store.ts', 'schemas/ may import only schemas/'],
  ['src/schemas/planted.ts', '../log/key-masking.ts', 'schemas/ may import only schemas/'],
  ['src/periodic-job.ts', './log/logger.ts', 'periodic-job.ts is a timer'],
  ['src/errors.ts', './log/logger.ts', 'errors.ts is the bottom of the house'],
  ['src/certificate-refusal.ts', './errors.ts', 'certificate-refusal.ts reads TLS refusal codes'],
  ['src/file-kind.ts', './errors.ts', 'file-kind.ts names what a file is'],
  ['src/pets/planted.ts', '../file-kind.ts', 'pets/ is the domain'],
  ['src/pets/planted.ts', '../certificate-refusal.ts', 'pets/ is the domain'],
  // A subfolder is below its room's own files, which compose it.
  ['src/routes/pets/planted.ts', '../v1-api.ts', "routes/' subfolders are below its own files"],
  [
    'src/admission/rate-limit/planted.ts',
    '../admission.ts',
    "admission/'s subfolders are below its own files",
  ],
  // A driver stays in its engine (or the rate limit's folder) and the composition root.
  ['src/pets/planted.ts', 'node:sqlite', "node:sqlite is SQLite's driver"],
  ['src/routes/planted.ts', 'pg', "pg is PostgreSQL's driver"],
  ['src/http/planted.ts', 'pg', "pg is PostgreSQL's driver"],
  ['src/store/sqlite/planted.ts', 'ioredis', "ioredis is Redis's client"],
  ['src/admission/rate-limit/planted.ts', 'pg', "pg is PostgreSQL's driver"],
  ['src/newroom/planted.ts', 'ioredis', "ioredis is Redis's client"],
  ['src/store/sqlite/planted.ts', 'pg', "pg is PostgreSQL's driver"],
  ['src/store/postgres/planted.ts', 'node:sqlite', "node:sqlite is SQLite's driver"],
  ['src/admission/rate-limit/planted.ts', 'pg/lib/index.js', "pg is PostgreSQL's driver"],
  ['src/pets/planted.ts', 'ioredis/built/index.js', "ioredis is Redis's client"],
  // cli/ chooses an engine in one place, open-store.ts; everywhere else it sees the port.
  ['src/cli/planted.ts', '../store/postgres/postgres-store.ts', 'cli/ reaches an engine only through'],
  ['src/cli/supervisor/planted.ts', '../../store/sqlite/sqlite-health.ts', 'cli/ reaches an engine'],
  // New files: a file at store/'s top is the port's; anywhere without a rule of its own, the catch-all.
  ['src/store/planted.ts', '../pets/pet-reader.ts', 'store/ at its top is the port'],
  ['src/planted.ts', './pets/pet-reader.ts', 'this file is in none'],
  ['src/newroom/planted.ts', '../store/store.ts', 'this file is in none'],
]

// Imports the rules must let through: each room's own and what sits below it.
const downward: Array<[file: string, specifier: string]> = [
  ['src/cli/planted.ts', '../config.ts'],
  ['src/cli/open-store.ts', '../store/postgres/postgres-store.ts'],
  ['src/cli/planted.ts', '../store/store.ts'],
  ['src/cli/planted.ts', '../store/shared/backup-role.ts'],
  ['src/config.ts', './routes/v1-api.ts'],
  ['src/config-schema.ts', './schemas/api-key.ts'],
  ['src/config-schema.ts', './pets/get-pet-deprecation.ts'],
  ['src/config-schema.ts', './setting-forms.ts'],
  ['src/setting-forms.ts', './schemas/api-key.ts'],
  ['src/app.ts', './store/store.ts'],
  ['src/app.ts', './admission/admission.ts'],
  ['src/server.ts', './log/logger.ts'],
  ['src/routes/planted.ts', '../periodic-job.ts'],
  ['src/routes/pets/planted.ts', '../../pets/pet-reader.ts'],
  ['src/routes/pets/planted.ts', '../openapi/error-responses.ts'],
  ['src/admission/planted.ts', '../pets/get-pet-deprecation.ts'],
  ['src/admission/rate-limit/planted.ts', './window-counter.ts'],
  ['src/admission/rate-limit/planted.ts', '../../errors.ts'],
  ['src/http/planted.ts', '../errors.ts'],
  ['src/http/planted.ts', '../log/key-masking.ts'],
  ['src/http/planted.ts', '../metrics/metrics.ts'],
  ['src/pets/planted.ts', '../store/store.ts'],
  ['src/metrics/planted.ts', '../log/log-output.ts'],
  ['src/log/planted.ts', '../schemas/api-key.ts'],
  ['src/store/store.ts', '../schemas/pet.ts'],
  ['src/store/shared/planted.ts', '../store.ts'],
  ['src/store/sqlite/planted.ts', '../shared/rows.ts'],
  ['src/store/sqlite/planted.ts', '../../schemas/pet.ts'],
  ['src/store/postgres/planted.ts', './postgres-connection.ts'],
  ['src/store/postgres/planted.ts', '../../errors.ts'],
  ['src/newroom/planted.ts', '../schemas/pet.ts'],
  ['src/store/postgres/planted.ts', 'pg'],
  ['src/store/sqlite/planted.ts', 'node:sqlite'],
  ['src/admission/rate-limit/planted.ts', 'ioredis'],
  ['src/cli/planted.ts', 'ioredis'],
  ['src/store/postgres/planted.ts', '../../certificate-refusal.ts'],
  ['src/admission/rate-limit/planted.ts', '../../certificate-refusal.ts'],
  ['src/store/sqlite/planted.ts', '../../file-kind.ts'],
  ['src/environment-file.ts', './file-kind.ts'],
]

/** Every TypeScript file under src/, as a path from the root (src/…). */
function sourceFiles(directory = 'src'): string[] {
  return readdirSync(join(ROOT, directory), { withFileTypes: true }).flatMap((entry) => {
    const path = `${directory}/${entry.name}`
    if (entry.isDirectory()) return sourceFiles(path)
    return entry.name.endsWith('.ts') ? [path] : []
  })
}

describe('the direction of imports, guarded by the linter', () => {
  let backwardOutcomes: Diagnostic[][]
  let downwardOutcomes: Diagnostic[][]
  before(() => {
    scratch = mkdtempSync(join(tmpdir(), 'petstore-imports-'))
    // The project's rules as they are, without the git ignore file a scratch folder does not have.
    const rules = JSON.parse(readFileSync(join(ROOT, 'biome.json'), 'utf8'))
    delete rules.vcs
    writeFileSync(join(scratch, 'biome.json'), JSON.stringify(rules))
    backwardOutcomes = lintEach(backward.map(([file, specifier]) => [file, specifier] as const))
    downwardOutcomes = lintEach(downward)
  })
  after(() => rmSync(scratch, { recursive: true, force: true }))

  backward.forEach(([file, specifier, rule], index) => {
    test(`when ${file} imports ${specifier}, then the linter rejects it naming the rule`, () => {
      const [refused, ...more] = refusals(backwardOutcomes[index] ?? [])
      assert.ok(refused && more.length === 0, JSON.stringify(backwardOutcomes[index]))
      assert.ok(refused.message.includes(rule), refused.message)
    })
  })

  downward.forEach(([file, specifier], index) => {
    test(`when ${file} imports ${specifier} (its own room or below), then the linter accepts it`, () => {
      assert.deepEqual(downwardOutcomes[index], [])
    })
  })

  test('when any file of src/ but the composition root imports cli/, then a rule refuses it: no file is without one', () => {
    const files = sourceFiles().filter((file) => !file.startsWith('src/cli/'))
    const planted = new Map(
      files.map((file) => [
        file,
        plant(relative(dirname(file), 'src/cli/command.ts').replace(/^(?!\.)/, './')),
      ]),
    )
    const outcomes = lint(planted)
    const unguarded = files.filter((file) => refusals(outcomes.get(file) ?? []).length !== 1)
    assert.deepEqual(unguarded, [])
  })
})
