import assert from 'node:assert/strict'
import { execFile, spawn } from 'node:child_process'
import {
  copyFileSync,
  existsSync,
  lstatSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
} from 'node:fs'
import { availableParallelism } from 'node:os'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { promisify } from 'node:util'
import { waitUntil, within } from './helpers/bounded-wait.ts'
import { temporaryDirectory } from './helpers/cleanup.ts'
import { startServeProcess, stop } from './helpers/cli-process.ts'
import { v8HelperThreads } from './helpers/process-threads.ts'
import { repositoryCopy } from './helpers/repository-copy.ts'
import { hasCommand, suiteNeeding } from './helpers/suite-requirements.ts'

const run = promisify(execFile)
const README = readFileSync(new URL('../README.md', import.meta.url), 'utf8')
const PROJECT_NODE = realpathSync(new URL('../node_modules/.bin/node', import.meta.url))

/** The README's curl lines for the three operations, each joined across its `\` continuations. */
function readmeCurlLines(): string[] {
  const block = /```sh\nKEY=[\s\S]*?```/.exec(README)?.[0] ?? ''
  return block
    .replaceAll('\\\n', ' ')
    .split('\n')
    .filter((line) => line.startsWith('curl '))
}

/**
 * A newcomer's shell: the machine's PATH without any node_modules/.bin (under `npm test` npm put the
 * project's first), so `npm` and `node` are the machine's own; and only the ports chosen, free ones.
 */
function newcomerEnvironment(): Record<string, string> {
  const path = (process.env.PATH ?? '').split(':').filter((entry) => !entry.includes('node_modules'))
  return {
    PATH: path.join(':'),
    ...(process.env.HOME === undefined ? {} : { HOME: process.env.HOME }),
    PORT: '0',
    METRICS_PORT: '0',
  }
}

describe(
  "the README's first command, npm start, as a newcomer runs it",
  suiteNeeding(
    'the first start',
    hasCommand('curl') ? undefined : { missing: 'no curl', remedy: 'apt-get install curl' },
  ),
  () => {
    test('when npm start runs in a fresh clone, then the initial key works on the three curl lines, and SIGTERM ends it with 0', {
      timeout: 60_000,
    }, async (t) => {
      const clone = repositoryCopy(t)
      const npm = spawn('npm', ['start'], {
        cwd: clone,
        env: newcomerEnvironment(),
        // Its own process group, so the cleanup can end whatever is left of it, a server npm left behind too.
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
      })
      const group = npm.pid
      assert.ok(group !== undefined, 'npm did not start')
      t.after(() => {
        try {
          process.kill(-group, 'SIGKILL')
        } catch {}
      })
      let output = ''
      npm.stdout.on('data', (chunk) => {
        output += chunk
      })
      npm.stderr.on('data', (chunk) => {
        output += chunk
      })
      const exited = new Promise<[number | null, NodeJS.Signals | null]>((resolve) =>
        npm.on('exit', (code, signal) => resolve([code, signal])),
      )
      await waitUntil(
        () => /serving http:/.test(output),
        () => `npm start did not serve:\n${output}`,
        {
          timeoutMs: 30_000,
        },
      )
      const origin = /serving (http:\/\/127\.0\.0\.1:\d+)\/v1/.exec(output)?.[1] ?? ''
      const serving = JSON.parse(output.split('\n').find((line) => line.includes('"serving ')) ?? '{}')

      // The script's own Node.js and flags, whatever node the PATH had.
      assert.equal(readlinkSync(`/proc/${serving.pid}/exe`), PROJECT_NODE)
      const argv = readFileSync(`/proc/${serving.pid}/cmdline`, 'utf8').split('\0')
      assert.ok(argv.includes('--max-semi-space-size=16'), argv.join(' '))
      // Idle between bursts, V8's memory reducer gives memory back but keeps the code compiled for them.
      assert.ok(argv.includes('--no-memory-reducer-favors-memory'), argv.join(' '))
      assert.ok(!argv.includes('--no-memory-reducer'), argv.join(' '))
      // V8's helpers sized by the cores it may use, less the main thread, where Node's default is four,
      // which on one core take it from the requests while they collect (docs/decisions.md).
      assert.equal(v8HelperThreads(serving.pid), Math.max(1, availableParallelism() - 1), argv.join(' '))
      const environment = readFileSync(`/proc/${serving.pid}/environ`, 'utf8').split('\0')
      assert.ok(
        environment.includes('MALLOC_ARENA_MAX=2'),
        `glibc kept to two malloc arenas: ${environment.filter((entry) => entry.startsWith('MALLOC')).join(' ') || 'unset'}`,
      )

      // Output is not a terminal, so the first start wrote its key next to the database, in the clone.
      const key = readFileSync(join(clone, 'data', 'initial-api-key'), 'utf8').trim()
      assert.match(key, /^psk_/)
      assert.ok(existsSync(join(clone, 'data', 'petstore.db')))
      // The start line names the database it serves, as a path to find it by.
      const store = `; store: sqlite:${join(clone, 'data', 'petstore.db')})`
      assert.ok(String(serving.msg).endsWith(store), serving.msg)
      assert.ok(lstatSync(join(clone, 'node_modules', '.cache')).isDirectory(), 'compile cache in the clone')

      const curl = async (line: string) =>
        (
          await run('bash', ['-c', line.replaceAll('http://localhost:8080', origin)], {
            env: { PATH: process.env.PATH ?? '', KEY: key },
            timeout: 10_000,
          })
        ).stdout
      const [list, create, get] = readmeCurlLines()
      assert.ok(list && create && get, `the README's curl lines: ${readmeCurlLines().join('\n')}`)
      const rex = { id: 1, name: 'Rex', categoryId: 1, status: 'available' }
      assert.deepEqual(JSON.parse(await curl(list)), [])
      const created = await curl(create)
      assert.match(created, /^HTTP\/1\.1 201 Created\r$/m)
      assert.match(created, /^location: \/v1\/pets\/1\r$/im)
      assert.deepEqual(JSON.parse(created.slice(created.indexOf('\r\n\r\n'))), rex)
      assert.deepEqual(JSON.parse(await curl(get)), rex)

      npm.kill('SIGTERM')
      const [code, signal] = await within(exited, 20_000, `npm start did not end on SIGTERM:\n${output}`)
      assert.deepEqual({ code, signal }, { code: 0, signal: null }, output)
      assert.throws(() => process.kill(serving.pid, 0), { code: 'ESRCH' }, 'the server outlived npm')
      await assert.rejects(fetch(`${origin}/v1/openapi.json`), 'the port is closed')
    })
  },
)

describe(
  'what a first start leaves in a working tree',
  suiteNeeding(
    'the working tree check',
    hasCommand('git') ? undefined : { missing: 'no git', remedy: 'apt-get install git' },
  ),
  () => {
    test("when a start keeps its database in a checkout's root (DATABASE_URL=sqlite:pets.db), then git ignores every file it wrote there: the database, its log and the initial key", async (t) => {
      const cwd = temporaryDirectory(t)
      copyFileSync(new URL('../.gitignore', import.meta.url), join(cwd, '.gitignore'))
      await run('git', ['init', '-q'], { cwd })
      const server = await startServeProcess({ DATABASE_URL: 'sqlite:pets.db' }, cwd)
      t.after(() => server.child.kill('SIGKILL'))
      const wrote = readdirSync(cwd).filter((name) => name !== '.git' && name !== '.gitignore')
      assert.ok(wrote.includes('initial-api-key') && wrote.includes('pets.db'), wrote.join(', '))
      const { stdout } = await run('git', ['status', '--porcelain', '--untracked-files=all'], { cwd })
      assert.equal(stdout, '?? .gitignore\n', `wrote ${wrote.join(', ')}`)
      await stop(server)
    })
  },
)
