import { cpSync, mkdirSync, readdirSync, realpathSync, symlinkSync } from 'node:fs'
import { basename, join, relative } from 'node:path'
import { type Cleanup, temporaryDirectory } from './cleanup.ts'

const REPOSITORY = realpathSync(new URL('../../', import.meta.url))
// What a fresh clone lacks: installed packages, git's own files, and what running or a developer left.
const LEFT_OUT = new Set(['.git', 'node_modules', 'data', '.env', 'artifacts', 'scratch'])

/**
 * The repository as a fresh clone after `npm install` has it, in a temporary directory: every file but
 * what a clone lacks, and a node_modules of links to the installed packages. Its `.cache` is left out, so
 * the compile cache a start writes lands in the copy, as everything else it writes does.
 */
export function repositoryCopy(t: Cleanup): string {
  const copy = realpathSync(temporaryDirectory(t))
  if (!relative(REPOSITORY, copy).startsWith('..')) throw new Error(`${copy} is inside the repository`)
  cpSync(REPOSITORY, copy, { recursive: true, filter: (path) => !LEFT_OUT.has(basename(path)) })
  const modules = join(REPOSITORY, 'node_modules')
  mkdirSync(join(copy, 'node_modules'))
  for (const entry of readdirSync(modules)) {
    if (entry !== '.cache') symlinkSync(join(modules, entry), join(copy, 'node_modules', entry))
  }
  return copy
}
