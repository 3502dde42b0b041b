import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { configTable, errorCodeTable } from '../scripts/readme-tables.ts'

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8')
const ci = readFileSync(new URL('../.ci/run', import.meta.url), 'utf8')
const SRC = new URL('../src/', import.meta.url)

/** The paths under src/ that the README's map names (`cli/`, `cli/supervisor/`, `config.ts`…). */
function mappedPaths(): string[] {
  const map = /### The map\n[\s\S]*?```\n([\s\S]*?)```/.exec(readme)?.[1] ?? ''
  const lines = map.split('\n')
  const paths: string[] = []
  const parents: string[] = []
  // Entries under `src/` are indented two spaces a level; a line's description may go on below it, further in.
  for (const line of lines.slice(lines.indexOf('src/') + 1)) {
    const entry = /^( {2,8})([\w.-]+(?:\/|\.\w+))(?: {2,}|$)/.exec(line)
    if (entry === null) {
      if (/^\S/.test(line)) break
      continue
    }
    const depth = (entry[1] as string).length / 2 - 1
    parents.length = depth
    const path = `${parents.join('')}${entry[2]}`
    paths.push(path)
    parents.push(entry[2] as string)
  }
  return paths
}

/** Every folder under src/ (`store/`, `store/sqlite/`…) and every file at its root. */
function treePaths(directory = ''): string[] {
  return readdirSync(new URL(directory, SRC), { withFileTypes: true }).flatMap((entry) => {
    if (entry.isDirectory()) return [`${directory}${entry.name}/`, ...treePaths(`${directory}${entry.name}/`)]
    return directory === '' ? [entry.name] : []
  })
}

describe('README', () => {
  test('when the configuration schema or the error codes change, then the README tables must follow', () => {
    assert.ok(readme.includes(configTable()), 'configuration table is stale: run npm run readme:tables')
    assert.ok(readme.includes(errorCodeTable()), 'error code table is stale: run npm run readme:tables')
  })

  test("when a folder or a file is added at src/'s root, then the README's map names it, and it names nothing that is not there", () => {
    const mapped = mappedPaths()
    const tree = treePaths()
    assert.deepEqual(
      tree.filter((path) => !mapped.includes(path)),
      [],
      'in src/ but not in the map',
    )
    const files = new Set(readdirSync(SRC, { recursive: true, withFileTypes: false }) as string[])
    const missing = mapped.filter((path) => !(path.endsWith('/') ? tree.includes(path) : files.has(path)))
    assert.deepEqual(missing, [], 'in the map but not in src/')
  })

  test('when the README or a page under docs/ links to a file of the repository, then the file is there', () => {
    const root = fileURLToPath(new URL('..', import.meta.url))
    const docs = (readdirSync(join(root, 'docs'), { recursive: true }) as string[])
      .filter((path) => path.endsWith('.md'))
      .map((path) => join('docs', path))
    const broken: string[] = []
    for (const page of ['README.md', 'CHANGELOG.md', 'packages/client/README.md', ...docs]) {
      const text = readFileSync(join(root, page), 'utf8')
      for (const [, target = ''] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const path = target.split('#')[0] ?? ''
        if (path === '' || /^[a-z]+:/.test(path)) continue
        if (!existsSync(join(root, dirname(page), path))) broken.push(`${page}: ${target}`)
      }
    }
    assert.deepEqual(broken, [])
  })

  test("when CI runs, then it runs the README's test command, literally", () => {
    const commands = /```sh\n(.+)\n(.+)\n```/.exec(readme)
    const [start, testCommand] = [1, 2].map((line) => commands?.[line]?.split('#')[0]?.trim())
    assert.equal(start, 'npm install && npm start')
    assert.equal(testCommand, 'npm install && npm test')
    assert.match(ci, new RegExp(`^${testCommand}$`, 'm'))
    assert.doesNotMatch(ci, /node@|nvm |\.cache\/node/, 'CI installs no Node.js: the project brings its own')
  })

  test('when npm run test:file is given no file, then it refuses in one line, exit 2, rather than run every file (and the helpers) as node --test would', () => {
    const path = (process.env.PATH ?? '').split(':').filter((entry) => !entry.includes('node_modules'))
    const result = spawnSync('npm', ['run', '-s', 'test:file'], {
      cwd: fileURLToPath(new URL('../', import.meta.url)),
      encoding: 'utf8',
      env: { PATH: path.join(':'), HOME: process.env.HOME ?? '/' },
    })
    assert.deepEqual(
      [result.status, result.stdout, result.stderr],
      [2, '', 'npm run test:file -- <files>: name the test files (npm test runs them all)\n'],
    )
  })
})
