import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { copyFileSync, existsSync, mkdirSync, readFileSync, symlinkSync } from 'node:fs'
import { delimiter, join } from 'node:path'
import { describe, test } from 'node:test'
import { CLI } from './helpers/cli-process.ts'
import { suiteNeeding } from './helpers/suite-requirements.ts'
import { type Cleanup, temporaryDirectory } from './helpers/test-server.ts'

const PACKAGE_JSON = new URL('../package.json', import.meta.url)

/** A Node.js older than the project needs: the machine's own (CI's is Node 20), found on PATH or in /usr. */
function olderNode(): { path: string; version: string } | undefined {
  const onPath = (process.env.PATH ?? '').split(delimiter).map((directory) => join(directory, 'node'))
  for (const path of new Set([...onPath, '/usr/bin/node', '/usr/local/bin/node'])) {
    if (!existsSync(path)) continue
    const version = spawnSync(path, ['-p', 'process.version'], { encoding: 'utf8' }).stdout?.trim() ?? ''
    const [major = 0, minor = 0] = version.slice(1).split('.').map(Number)
    if (version !== '' && (major < 24 || (major === 24 && minor < 2))) return { path, version }
  }
  return undefined
}

const older = olderNode()

/** A checkout holding only the entry point and package.json, with or without the project's own Node. */
function checkout(t: Cleanup, withOwnNode: boolean): string {
  const root = temporaryDirectory(t)
  mkdirSync(join(root, 'bin'))
  copyFileSync(CLI, join(root, 'bin', 'petstore.js'))
  copyFileSync(PACKAGE_JSON, join(root, 'package.json'))
  if (withOwnNode) {
    mkdirSync(join(root, 'node_modules', '.bin'), { recursive: true })
    symlinkSync(process.execPath, join(root, 'node_modules', '.bin', 'node'))
  }
  return join(root, 'bin', 'petstore.js')
}

function runOn(node: string, entry: string, args: string[]) {
  const result = spawnSync(node, [entry, ...args], { encoding: 'utf8', env: { PATH: process.env.PATH } })
  return { status: result.status, stdout: result.stdout, stderr: result.stderr }
}

// CI's machine has its own older Node.js (20): there, not finding one fails the suite rather than skip it.
const options = suiteNeeding(
  'the entry point on an older Node.js',
  older
    ? undefined
    : {
        missing: 'no Node.js older than 24.2 on this machine (PATH, /usr/bin, /usr/local/bin) to run it with',
        remedy: 'apt-get install nodejs',
      },
)

describe('the entry point on an older Node.js', options, () => {
  const { path, version } = older ?? { path: '', version: '' }
  const needs = `petstore: needs Node.js 24.2 or newer, and ${path} is ${version}; `

  test('when run directly, then it exits 1 with one line saying what it needs, and no stack trace', () => {
    for (const args of [['serve'], ['--help'], ['keys', 'list']]) {
      const result = runOn(path, CLI, args)
      assert.equal(result.status, 1, args.join(' '))
      assert.equal(result.stdout, '')
      assert.equal(result.stderr.split('\n').length, 2, `one line:\n${result.stderr}`)
      assert.ok(result.stderr.startsWith(needs), result.stderr)
    }
  })

  test('when the project has its own Node.js installed, then the line says which commands use it', (t) => {
    const result = runOn(path, checkout(t, true), ['serve'])
    assert.equal(result.status, 1)
    assert.equal(
      result.stderr,
      `${needs}npm start and npm run petstore -- <command> use the one npm install put in node_modules/.bin (or, in this shell: export PATH="$PWD/node_modules/.bin:$PATH")\n`,
    )
  })

  test('when the project has not been installed, then the line says to run npm install', (t) => {
    const result = runOn(path, checkout(t, false), ['serve'])
    assert.equal(result.status, 1)
    assert.equal(
      result.stderr,
      `${needs}run npm install (it installs the project's own Node.js), then npm start or npm run petstore -- <command>\n`,
    )
  })
})

describe("the project's own Node.js", () => {
  test('when npm installs it, then it is one exact version, the same in package.json and the lock, that meets engines', () => {
    const manifest = JSON.parse(readFileSync(PACKAGE_JSON, 'utf8'))
    const lock = JSON.parse(readFileSync(new URL('../package-lock.json', import.meta.url), 'utf8'))
    const pinned: string = manifest.devDependencies.node
    assert.match(pinned, /^\d+\.\d+\.\d+$/, 'an exact version: a new Node.js is a deliberate change')
    assert.equal(lock.packages['node_modules/node'].version, pinned)
    const [major = 0, minor = 0] = pinned.split('.').map(Number)
    const [needMajor = 0, needMinor = 0] = (manifest.engines.node.match(/\d+/g) ?? []).map(Number)
    assert.ok(
      major > needMajor || (major === needMajor && minor >= needMinor),
      `${pinned} meets ${manifest.engines.node}`,
    )
    assert.equal(
      manifest.allowScripts.node,
      true,
      'its preinstall script fetches the binary: allowed by name',
    )
  })
})
