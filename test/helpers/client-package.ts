import { execFile } from 'node:child_process'
import { cpSync, mkdirSync, realpathSync } from 'node:fs'
import { basename, join, relative } from 'node:path'
import { promisify } from 'node:util'
import { type Cleanup, temporaryDirectory } from './cleanup.ts'

const run = promisify(execFile)
const REPOSITORY = realpathSync(new URL('../../', import.meta.url))
const PACKAGE = join(REPOSITORY, 'packages', 'client')
const NPM_TIMEOUT_MS = 120_000

export interface ClientProject {
  /** A new project outside the repository, with the packed `@petstore/client` installed in it. */
  directory: string
  /** The tarball `npm pack` made, as another team would receive it. */
  tarball: string
}

/**
 * npm with an environment of its own: under `npm test` the parent npm exports settings such as
 * npm_config_local_prefix (the repository), which would send an install back into the repository.
 */
async function npm(args: string[], cwd: string): Promise<string> {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.toLowerCase().startsWith('npm_')),
  )
  // The build finds the repository's TypeScript on PATH: the copy being packed has no node_modules above it.
  env.PATH = `${join(REPOSITORY, 'node_modules', '.bin')}:${process.env.PATH ?? ''}`
  const { stdout } = await run('npm', [...args, '--no-audit', '--no-fund', '--loglevel=error'], {
    cwd,
    env,
    timeout: NPM_TIMEOUT_MS,
  })
  return stdout
}

/**
 * Packs packages/client as a team would get it (`npm pack`, which builds it first) and installs the tarball
 * into a new project in a temporary directory outside the repository. The package is copied before packing,
 * so test files running at once never build into the same dist/ and the work tree is left as it was.
 */
export async function installPackedClient(t: Cleanup): Promise<ClientProject> {
  const root = realpathSync(temporaryDirectory(t))
  if (!relative(REPOSITORY, root).startsWith('..')) throw new Error(`${root} is inside the repository`)
  const source = join(root, 'client-source')
  cpSync(PACKAGE, source, {
    recursive: true,
    filter: (path) => !['dist', 'node_modules'].includes(basename(path)) && !path.endsWith('.tgz'),
  })
  const packed = JSON.parse(await npm(['pack', '--json', '--pack-destination', root], source)) as [
    { filename: string },
  ]
  const tarball = join(root, packed[0].filename)
  const directory = join(root, 'consumer')
  mkdirSync(directory)
  // As the README tells another team: a new project (npm init writes "type": "commonjs"), made ES modules.
  await npm(['init', '-y'], directory)
  await npm(['pkg', 'set', 'type=module'], directory)
  await npm(['install', '--prefer-offline', tarball], directory)
  return { directory, tarball }
}
