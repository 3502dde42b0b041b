import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, type TestContext, test } from 'node:test'
import { UNSUPPORTED_ENGINE } from '../packages/client/src/exact-json.ts'
import {
  commandsIn,
  installedPackage,
  type Recipe,
  recipeProject,
  recipesIn,
  runCommands,
} from './helpers/client-recipes.ts'
import { GENERATOR_DEFAULTS, PAGE_ADDRESS } from './helpers/generator-defaults.ts'
import { type Lack, suiteNeeding } from './helpers/suite-requirements.ts'
import { startTestServer, type TestServer } from './helpers/test-server.ts'

const read = (path: string) => readFileSync(new URL(`../${path}`, import.meta.url), 'utf8')

/** Every "Node.js N or newer" and "Node.js N+" in a text, as N. */
function nodeFloorsIn(text: string): string[] {
  return [...text.matchAll(/Node\.js (\d+)(?: or newer|\+)/g)].map((match) => match[1] ?? '')
}

describe('what the docs tell client authors', () => {
  test('when a page names the Node.js that keeps int64 exact, then it is the client package engines floor', () => {
    const engines = JSON.parse(read('packages/client/package.json')).engines.node as string
    const floor = /^>=(\d+)\.0\.0$/.exec(engines)?.[1]
    assert.ok(floor !== undefined, `packages/client engines: ${engines}`)
    const readme = read('README.md')
    const clientSection = readme.slice(readme.indexOf('### From TypeScript'), readme.indexOf('## The API'))
    const pages = {
      'README.md, "From TypeScript"': clientSection,
      'packages/client/README.md': read('packages/client/README.md'),
      'docs/clients.md': read('docs/clients.md'),
      'the error createClient throws': UNSUPPORTED_ENGINE,
    }
    for (const [page, text] of Object.entries(pages)) {
      const floors = nodeFloorsIn(text)
      assert.ok(floors.length > 0, `${page} names no Node.js version`)
      assert.deepEqual([...new Set(floors)], [floor], `${page} names Node.js ${floors.join(', ')}`)
    }
  })
})

// The page's recipes, run as written against a real server; the appended line prints what the client saw.
const RECIPES = recipesIn(read('docs/clients.md'))
const SHARED = RECIPES[0] as Recipe
const PRINT = `
console.log(JSON.stringify({ pet, again, page }, (_key, value) => (typeof value === 'bigint' ? \`\${value}n\` : value)))
`
const ABOVE_DOUBLES = 9007199254740993n // 2^53 + 1: a JavaScript number makes it ...992

/** Why the recipes cannot run here, if the generators are not installed. */
function missingGenerators(): Lack | undefined {
  const missing = [
    'openapi-typescript',
    'openapi-fetch',
    '@hey-api/openapi-ts',
    'orval',
    'typescript',
  ].filter((name) => installedPackage(name) === undefined)
  if (missing.length === 0) return undefined
  return { missing: `${missing.join(', ')} not installed`, remedy: 'npm install' }
}

/** Runs files and commands in a new project against the server; resolves with the last line printed, parsed. */
async function runInProject(
  t: TestContext,
  server: TestServer,
  files: Map<string, string>,
  commands: string[][],
  env: Record<string, string> = {},
): Promise<Record<string, unknown>> {
  const address = (text: string) => text.replaceAll(PAGE_ADDRESS, `${server.origin}/v1`)
  const project = recipeProject(t, new Map([...files].map(([path, text]) => [path, address(text)])))
  const output = await runCommands(
    project,
    commands.map((words) => words.map(address)),
    {
      PETSTORE_URL: `${server.origin}/v1`,
      PETSTORE_API_KEY: server.key,
      ...env,
    },
  )
  return JSON.parse(output.trim().split('\n').at(-1) ?? '')
}

describe(
  'docs/clients.md: each generator recipe, run as written',
  suiteNeeding('the client recipes', missingGenerators()),
  () => {
    test('when the page names a generator version, then it is the one the recipes run with, and its install lines pin it', () => {
      const page = read('docs/clients.md')
      const table = page.match(/^\| (openapi|@hey-api|orval).*$/gm) ?? []
      const named = table.flatMap((row) => [...(row.split('|')[1] ?? '').matchAll(/([@\w/-]+) (\d+\.\d+)/g)])
      assert.equal(named.length, 4, table.join('\n'))
      for (const [, name = '', version] of named) {
        const installed = JSON.parse(readFileSync(`${installedPackage(name)}/package.json`, 'utf8')).version
        assert.ok(
          installed.startsWith(`${version}.`),
          `the page says ${name} ${version}, npm install gives ${installed}`,
        )
        // npm on an older Node.js would otherwise pick an older release whose engines it meets.
        assert.match(page, new RegExp(`^npm install .*${name}@${version}\\b`, 'm'), `${name}'s install line`)
      }
    })

    for (const recipe of RECIPES.slice(1)) {
      test(`when ${recipe.title} is set up as the page says, then 9007199254740993 is stored and read back exact`, {
        timeout: 120_000,
      }, async (t) => {
        const server = await startTestServer(t)
        const files = new Map([...SHARED.files, ...recipe.files])
        files.set('src/main.ts', `${files.get('src/main.ts')}${PRINT}`)
        const seen = await runInProject(t, server, files, [...SHARED.commands, ...recipe.commands])
        const rex = { id: '1n', name: 'Rex', categoryId: `${ABOVE_DOUBLES}n` }
        assert.deepEqual(seen, { pet: rex, again: rex, page: [rex] })
        assert.equal((await server.store.getPet(1n))?.categoryId, ABOVE_DOUBLES, 'what the service stored')
      })

      test(`when ${recipe.title} keeps its defaults, then 9007199254740993 is stored and read back as ...992`, {
        timeout: 120_000,
      }, async (t) => {
        const setup = GENERATOR_DEFAULTS[recipe.title]
        assert.ok(setup !== undefined, `no default setup for "${recipe.title}"`)
        const server = await startTestServer(t)
        const exact = await server.store.createPet({ pet: { name: 'Exact', categoryId: ABOVE_DOUBLES } })
        const files = new Map([...SHARED.files, ...Object.entries(setup.files)])
        const commands = [...SHARED.commands, ...commandsIn(setup.commands)]
        const seen = await runInProject(t, server, files, commands, { EXACT_PET_ID: String(exact.pet.id) })
        assert.deepEqual(seen, { created: '2', read: '9007199254740992' })
        assert.equal(
          (await server.store.getPet(2n))?.categoryId,
          ABOVE_DOUBLES - 1n,
          'what the service stored',
        )
      })
    }
  },
)
