import assert from 'node:assert/strict'
import { execFile, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { UNSUPPORTED_ENGINE } from '../packages/client/src/exact-json.ts'
import { type ClientProject, installPackedClient } from './helpers/client-package.ts'
import { type Lack, suiteNeeding } from './helpers/suite-requirements.ts'
import { startTestServer, suiteCleanup } from './helpers/test-server.ts'

const run = promisify(execFile)
const ABOVE_DOUBLES = 9007199254740993n // 2^53 + 1: a JavaScript number would make it ...992
const INT64_MAX = 9223372036854775807n
const OLD_NODE = '/usr/bin/node'
const README = readFileSync(new URL('../README.md', import.meta.url), 'utf8')

/** Why the machine's Node.js cannot show the refusal: it is not older than 21 (CI's is 20). */
function oldNodeLack(): Lack | undefined {
  const version = spawnSync(OLD_NODE, ['--version'], { encoding: 'utf8' }).stdout?.trim() ?? ''
  if (Number(/^v(\d+)\./.exec(version)?.[1]) < 21) return undefined
  return {
    missing: `no Node.js older than 21 at ${OLD_NODE} (found ${version || 'none'})`,
    remedy: 'apt-get install nodejs',
  }
}

/** Every file under a directory, relative to it. */
function filesUnder(directory: string): string[] {
  return readdirSync(directory, { recursive: true, encoding: 'utf8' })
    .filter((path) => statSync(join(directory, path)).isFile())
    .sort()
}

// Plain JavaScript, as a team without TypeScript writes it; bigints are printed as "<digits>n".
const CONSUMER_SCRIPT = `import { createClient, PetStoreError } from '@petstore/client'
const client = createClient({ baseUrl: process.env.PETSTORE_URL, apiKey: process.env.PETSTORE_API_KEY })
const created = await client.createPet({ name: 'Rex', categoryId: ${ABOVE_DOUBLES}n, status: 'sold' })
const edge = await client.createPet({ name: 'Max', categoryId: ${INT64_MAX}n }, { idempotencyKey: 'max-1' })
const fetched = await client.getPet(created.id)
const page = await client.listPets({ limit: 1, status: 'sold' })
const missing = await client.getPet(${INT64_MAX}n).catch((error) => error)
// Numbers where int64s go, as plain JavaScript can pass them: refused, never sent rounded.
const numbers = await Promise.all([
  client.getPet(${ABOVE_DOUBLES}),
  client.createPet({ name: 'Rounded', categoryId: ${ABOVE_DOUBLES} }),
].map((call) => call.then(() => 'sent', (error) => error.constructor.name + ': ' + error.message)))
const show = (value) => JSON.stringify(value, (_key, v) => (typeof v === 'bigint' ? v + 'n' : v))
console.log(show({ created, edge, fetched, listed: page.pets, next: page.next, numbers,
  missing: { isPetStoreError: missing instanceof PetStoreError, code: missing.code, status: missing.status } }))
`

const TYPED_CONSUMER = `import { createClient, type Pet, PetStoreError } from '@petstore/client'
const client = createClient({ baseUrl: 'http://localhost:8080/v1', apiKey: 'psk_x' })
const pet: Pet = await client.createPet({ name: 'Rex', categoryId: 9007199254740993n, status: 'sold' })
const id: bigint = pet.id
const page = await client.listPets({ limit: 5, status: 'available', ...(await client.listPets()).next })
for await (const each of client.listAllPets({ status: 'sold' })) console.log(each.categoryId + 1n)
try { await client.getPet(id) } catch (error) { if (error instanceof PetStoreError) console.log(error.code, error.status) }
console.log(page.pets.length)
// Values that may be missing, passed on as they are (exactOptionalPropertyTypes): left out when sent.
declare const maybe: { status: 'sold' | undefined; limit: number | undefined; text: string | undefined; signal: AbortSignal | undefined; fetch: typeof fetch | undefined; listener: (() => void) | undefined }
createClient({ baseUrl: 'http://localhost:8080/v1', apiKey: 'psk_x', timeoutMs: maybe.limit, fetch: maybe.fetch, onDeprecation: maybe.listener })
await client.createPet({ name: 'Opt', categoryId: 1n, status: maybe.status }, { idempotencyKey: maybe.text, signal: maybe.signal })
await client.listPets({ limit: maybe.limit, status: maybe.status, cursor: maybe.text }, { signal: maybe.signal })
`

/** The compilers a consumer may have: this repository's TypeScript 7, and the generator's TypeScript 5 if installed. */
function compilers(): Array<{ name: string; command: string[] }> {
  const repository = fileURLToPath(new URL('../', import.meta.url))
  const ts5 = join(repository, 'tools/client-generator/node_modules/typescript/bin/tsc')
  return [
    { name: 'TypeScript 7', command: [join(repository, 'node_modules/.bin/tsc')] },
    ...(existsSync(ts5) ? [{ name: 'TypeScript 5', command: [process.execPath, ts5] }] : []),
  ]
}

async function typeCheck(directory: string, command: string[]): Promise<{ ok: boolean; output: string }> {
  const [file = '', ...args] = command
  return run(file, [...args, '-p', directory], { timeout: 60_000 }).then(
    ({ stdout }) => ({ ok: true, output: stdout }),
    (error: { stdout?: string; stderr?: string }) => ({
      ok: false,
      output: `${error.stdout}${error.stderr}`,
    }),
  )
}

describe('@petstore/client, packed and installed in a project outside the repository', () => {
  const cleanup = suiteCleanup()
  let project: ClientProject
  before(async () => {
    project = await installPackedClient(cleanup)
  })

  test('when installed, then node_modules holds the client alone: built JavaScript, declarations, no server', () => {
    const modules = join(project.directory, 'node_modules')
    assert.deepEqual(
      readdirSync(modules).filter((name) => !name.startsWith('.')),
      ['@petstore'],
    )
    assert.deepEqual(readdirSync(join(modules, '@petstore')), ['client'])
    const installed = join(modules, '@petstore', 'client')
    const files = filesUnder(installed)
    assert.ok(files.includes('dist/index.js') && files.includes('dist/index.d.ts'), files.join(', '))
    const unexpected = files.filter(
      (path) => !/^(package\.json|README\.md|dist\/[\w-]+\.(js|d\.ts))$/.test(path),
    )
    assert.deepEqual(unexpected, [], 'only package.json, the README and dist/*.js + *.d.ts are shipped')
    const server = files.filter((path) =>
      /fastify|sqlite|\bpg\b/.test(readFileSync(join(installed, path), 'utf8')),
    )
    assert.deepEqual(server, [], 'no shipped file mentions the server')
    const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8'))
    assert.equal(manifest.name, '@petstore/client')
    assert.equal(manifest.version, '1.0.0')
    assert.deepEqual(manifest.engines, { node: '>=22.0.0' })
    assert.equal(manifest.dependencies, undefined)
    assert.equal(manifest.sideEffects, false)
    assert.deepEqual(manifest.exports['.'], { types: './dist/index.d.ts', default: './dist/index.js' })
    // For `moduleResolution: node`, which reads no `exports`.
    assert.equal(manifest.types, './dist/index.d.ts')
    assert.equal(manifest.main, './dist/index.js')
    const kB = statSync(project.tarball).size / 1000
    const told = Number(/petstore-client-1\.0\.0\.tgz \(about (\d+) kB\)/.exec(README)?.[1])
    assert.ok(Math.abs(told - kB) < 1, `the README says about ${told} kB, the tarball is ${kB} kB`)
  })

  test('when installed, then every declaration imports only files the package ships', () => {
    const dist = join(project.directory, 'node_modules', '@petstore', 'client', 'dist')
    for (const file of readdirSync(dist).filter((name) => name.endsWith('.d.ts'))) {
      const text = readFileSync(join(dist, file), 'utf8')
      const specifiers = [...text.matchAll(/['"](\.{1,2}\/[^'"]+)['"]/g)]
      for (const [, specifier = ''] of specifiers) {
        // A consumer's compiler reads './x.js' as './x.d.ts': './x.ts' is a file it never gets.
        assert.match(specifier, /\.js$/, `${file} imports ${specifier}`)
        assert.ok(existsSync(join(dist, specifier.replace(/\.js$/, '.d.ts'))), `${file} imports ${specifier}`)
      }
    }
  })

  test('when a CommonJS script requires the client, then it loads (Node.js loads ES modules so from 22.12 on)', async () => {
    const script = join(project.directory, 'require.cjs')
    writeFileSync(
      script,
      "const { createClient } = require('@petstore/client')\nconsole.log(typeof createClient)\n",
    )
    const { stdout } = await run(process.execPath, [script], { cwd: project.directory, timeout: 30_000 })
    assert.equal(stdout.trim(), 'function')
  })

  test('when a plain .mjs script calls the three operations on a real server, then int64s are exact both ways', async (t) => {
    const server = await startTestServer(t)
    writeFileSync(join(project.directory, 'consumer.mjs'), CONSUMER_SCRIPT)
    const { stdout } = await run(process.execPath, ['consumer.mjs'], {
      cwd: project.directory,
      env: {
        PATH: process.env.PATH ?? '',
        PETSTORE_URL: `${server.origin}/v1`,
        PETSTORE_API_KEY: server.key,
      },
      timeout: 60_000,
    })
    const seen = JSON.parse(stdout)
    const rex = { id: '1n', name: 'Rex', categoryId: `${ABOVE_DOUBLES}n`, status: 'sold' }
    assert.deepEqual(seen.created, rex)
    assert.deepEqual(seen.edge, { id: '2n', name: 'Max', categoryId: `${INT64_MAX}n` })
    assert.deepEqual(seen.fetched, rex)
    assert.deepEqual(seen.listed, [rex])
    assert.deepEqual(seen.missing, { isPetStoreError: true, code: 'pet_not_found', status: 404 })
    const refused = (name: string) =>
      `TypeError: ${name} must be a bigint (e.g. 9007199254740993n, or BigInt of its text): a number above 2^53 is already rounded, so none is taken`
    assert.deepEqual(seen.numbers, [refused('id'), refused('categoryId')])
    // What the client sent, as the server stored it: every digit arrived.
    const stored = await server.store.listPets({ limit: 10 })
    assert.deepEqual(
      stored.map((pet) => pet.categoryId),
      [ABOVE_DOUBLES, INT64_MAX],
    )
  })

  test('when TypeScript checks a consumer against the shipped declarations, then it passes, and a number for an int64 fails', async (t) => {
    // skipLibCheck stays off, so the shipped .d.ts files are checked as well as the consumer.
    const compilerOptions = {
      module: 'nodenext',
      target: 'es2022',
      lib: ['es2022', 'dom'],
      types: [],
      strict: true,
      exactOptionalPropertyTypes: true,
      noUncheckedIndexedAccess: true,
    }
    const consumers = {
      good: TYPED_CONSUMER,
      bad: TYPED_CONSUMER.replace('9007199254740993n', '1'),
      // A listed pet sent back as a new one: the service would refuse its id with 400.
      petAsNew: `${TYPED_CONSUMER}\nawait client.createPet(pet)\n`,
    }
    for (const [name, source] of Object.entries(consumers)) {
      mkdirSync(join(project.directory, name))
      writeFileSync(join(project.directory, name, 'consumer.ts'), source)
      writeFileSync(join(project.directory, name, 'tsconfig.json'), JSON.stringify({ compilerOptions }))
    }
    for (const { name, command } of compilers()) {
      await t.test(name, async () => {
        const good = await typeCheck(join(project.directory, 'good'), [...command, '--noEmit'])
        assert.ok(good.ok, good.output)
        const bad = await typeCheck(join(project.directory, 'bad'), [...command, '--noEmit'])
        assert.equal(bad.ok, false)
        assert.match(bad.output, /consumer\.ts\(3,.*'number' is not assignable to type 'bigint'/)
        const petAsNew = await typeCheck(join(project.directory, 'petAsNew'), [...command, '--noEmit'])
        assert.equal(petAsNew.ok, false)
        assert.match(
          petAsNew.output,
          /property 'id' are incompatible[\s\S]*'bigint' is not assignable to type 'never'/,
        )
      })
    }
  })

  test("when the READMEs' examples are type-checked as written (strict, no unused names), then they pass", async (t) => {
    const repository = fileURLToPath(new URL('../', import.meta.url))
    const readmes = {
      'README.md': README.slice(README.indexOf('### From TypeScript')),
      'packages/client/README.md': readFileSync(join(repository, 'packages/client/README.md'), 'utf8'),
    }
    const compilerOptions = {
      module: 'nodenext',
      target: 'es2022',
      lib: ['es2022', 'dom'],
      // The examples read process.env and call crypto.randomUUID: a Node.js project's types.
      types: ['node'],
      typeRoots: [join(repository, 'node_modules/@types')],
      strict: true,
      noUnusedLocals: true,
    }
    for (const [name, text] of Object.entries(readmes)) {
      const example = /```ts\n([\s\S]*?)```/.exec(text)?.[1]
      assert.ok(example?.includes('createClient'), `${name} has no TypeScript example`)
      const directory = join(project.directory, `example-${name.replaceAll('/', '-')}`)
      mkdirSync(directory)
      writeFileSync(join(directory, 'consumer.mts'), example ?? '')
      writeFileSync(join(directory, 'tsconfig.json'), JSON.stringify({ compilerOptions }))
      for (const { name: compiler, command } of compilers()) {
        await t.test(`${name}, ${compiler}`, async () => {
          const checked = await typeCheck(directory, [...command, '--noEmit'])
          assert.ok(checked.ok, checked.output)
        })
      }
    }
  })

  test(
    'when the engine cannot keep int64 exact (Node.js 20), then createClient throws one sentence saying so',
    suiteNeeding('the old-engine check', oldNodeLack()),
    () => {
      const script = `import('@petstore/client').then(({ createClient }) => {
      try { createClient({ baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'psk_x' }); console.log('created') }
      catch (error) { console.log(error.constructor.name + ': ' + error.message) }
    })`
      const old = spawnSync(OLD_NODE, ['--input-type=module', '-e', script], {
        cwd: project.directory,
        encoding: 'utf8',
        timeout: 30_000,
      })
      assert.equal(old.status, 0, old.stderr)
      assert.equal(old.stdout.trim(), `TypeError: ${UNSUPPORTED_ENGINE}`)
      assert.match(UNSUPPORTED_ENGINE, /^[^\n]+ \(Node\.js 22 or newer, [^)]+\)\.$/)
    },
  )

  test('when the engine has exact JSON but no AbortSignal.any (Chrome 114 and 115), then createClient throws the same sentence', () => {
    // Node.js 24 with the one feature taken away: every call with a signal and a timeout would need it.
    const script = `delete AbortSignal.any
    import('@petstore/client').then(({ createClient }) => {
      try { createClient({ baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'psk_x' }); console.log('created') }
      catch (error) { console.log(error.constructor.name + ': ' + error.message) }
    })`
    const spawned = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      cwd: project.directory,
      encoding: 'utf8',
      timeout: 30_000,
    })
    assert.equal(spawned.status, 0, spawned.stderr)
    assert.equal(spawned.stdout.trim(), `TypeError: ${UNSUPPORTED_ENGINE}`)
    assert.match(UNSUPPORTED_ENGINE, /AbortSignal\.any/)
  })
})
