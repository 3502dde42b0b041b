import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import {
  CLI,
  type CliResult,
  cliEnvironment,
  runCommand,
  startServeProcess,
  stop,
} from './helpers/cli-process.ts'
import { temporaryDirectory } from './helpers/test-server.ts'

const LOADED_PACKAGES = fileURLToPath(new URL('./helpers/loaded-packages.mjs', import.meta.url))
// What only a server needs: the framework and its plugins, the metrics, the rate limit's Redis client.
const SERVER_PACKAGES = /^(fastify|@fastify\/.*|prom-client|ioredis)$/

/** Runs the CLI, and answers with its result and the npm packages its process loaded. */
async function runCounting(
  args: string[],
  env: Record<string, string>,
  cwd: string,
): Promise<{ result: CliResult; packages: string[] }> {
  const file = join(cwd, `loaded-${args.join('-').replace(/\W+/g, '_')}.txt`)
  const result = await runCommand(process.execPath, ['--import', LOADED_PACKAGES, CLI, ...args], {
    env: cliEnvironment({ ...env, LOADED_PACKAGES_FILE: file }),
    cwd,
  })
  return { result, packages: packagesIn(file) }
}

/** The packages loaded-packages.mjs wrote to `file` as its process exited. */
function packagesIn(file: string): string[] {
  return readFileSync(file, 'utf8').split('\n').filter(Boolean)
}

// A command loads what it runs, not every command's modules: the help, a usage error and the data
// commands answer without the server's framework (docs/decisions.md, "Each command loads its own modules").
describe('petstore CLI start-up', () => {
  test('when asked for help or the version, or given an unknown command, then it loads no package at all', async (t) => {
    const cwd = temporaryDirectory(t)
    for (const args of [['--help'], ['--version'], ['frobnicate']]) {
      const { result, packages } = await runCounting(args, {}, cwd)
      assert.equal(result.status, args[0] === 'frobnicate' ? 2 : 0, args.join(' '))
      assert.deepEqual(packages, [], args.join(' '))
    }
  })

  test("when a data command runs on SQLite (migrate, keys, seed, backup, restore, copy), or a usage error stops one, then none of the server's packages is loaded", async (t) => {
    const cwd = temporaryDirectory(t)
    const env = { DATABASE_URL: 'sqlite:pets.db' }
    for (const args of [
      ['migrate'],
      ['keys', 'create', '--name', 'reader'],
      ['seed', '--count', '3'],
      ['backup', '--to', 'copy.db'],
      ['copy', '--from', 'sqlite:copy.db', '--to', 'sqlite:other.db'],
      ['restore', '--from', 'copy.db'],
      ['seed', '--count', 'many'],
      ['keys', 'create', '--help'],
    ]) {
      const { result, packages } = await runCounting(args, env, cwd)
      const usage = args.includes('many') ? 2 : 0
      assert.equal(result.status, usage, `${args.join(' ')}: ${result.stderr}`)
      assert.deepEqual(
        packages.filter((name) => SERVER_PACKAGES.test(name)),
        [],
        args.join(' '),
      )
    }
  })

  test('when the server starts, then it loads the framework (what the other commands go without)', async (t) => {
    const { result, packages } = await runCounting(['openapi'], {}, temporaryDirectory(t))
    assert.equal(result.status, 0, result.stderr)
    assert.ok(packages.includes('fastify'), packages.join(' '))
  })

  test("when the server serves on SQLite without REDIS_URL, then neither Redis's client nor PostgreSQL's is loaded", async (t) => {
    const cwd = temporaryDirectory(t)
    const file = join(cwd, 'loaded-serve.txt')
    const server = await startServeProcess(
      { NODE_OPTIONS: `--import=${LOADED_PACKAGES}`, LOADED_PACKAGES_FILE: file },
      cwd,
    )
    t.after(() => server.child.kill('SIGKILL'))
    await stop(server)
    const packages = packagesIn(file)
    assert.ok(packages.includes('fastify'), packages.join(' '))
    assert.deepEqual(
      packages.filter((name) => /^(ioredis|pg)$/.test(name)),
      [],
    )
  })
})
