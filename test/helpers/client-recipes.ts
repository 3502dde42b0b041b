import { execFile } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { promisify } from 'node:util'
import { type Cleanup, temporaryDirectory } from './cleanup.ts'

const run = promisify(execFile)
const REPOSITORY = realpathSync(new URL('../../', import.meta.url))
// Where `npm install` put the generators: the client-generator workspace, or hoisted to the root.
const INSTALLED = [join(REPOSITORY, 'tools/client-generator/node_modules'), join(REPOSITORY, 'node_modules')]
const COMMAND_TIMEOUT_MS = 60_000

/** One section of docs/clients.md: the files its code blocks name and the commands of its sh blocks. */
export interface Recipe {
  title: string
  /** Each code block whose first line is `// <path>`, by that path, as written. */
  files: Map<string, string>
  /** Each line of its sh blocks, the comment removed, split at `&&`, as words. */
  commands: string[][]
}

/** The sections of a markdown page, each with its files and commands. */
export function recipesIn(markdown: string): Recipe[] {
  return markdown
    .split(/^## /m)
    .slice(1)
    .map((section) => {
      const recipe: Recipe = {
        title: section.slice(0, section.indexOf('\n')),
        files: new Map(),
        commands: [],
      }
      for (const [, language, code = ''] of section.matchAll(/^```(\w+)\n([\s\S]*?)^```$/gm)) {
        if (language === 'sh') recipe.commands.push(...commandsIn(code))
        const path = /^\/\/ (\S+\.\w+)\n/.exec(code)?.[1]
        if (path !== undefined) recipe.files.set(path, code)
      }
      return recipe
    })
}

/** The commands of a shell snippet: one per line or per `&&`, comments dropped, as words. */
export function commandsIn(script: string): string[][] {
  return script
    .split('\n')
    .flatMap((line) => (line.split('#')[0] ?? '').split('&&'))
    .map((command) => command.trim().split(/\s+/).filter(Boolean))
    .filter((words) => words.length > 0)
}

/** Where an installed package is, or undefined: the first of the workspace's and the root's node_modules. */
export function installedPackage(name: string): string | undefined {
  return INSTALLED.map((modules) => join(modules, name)).find((path) =>
    existsSync(join(path, 'package.json')),
  )
}

function manifestOf(directory: string): {
  name: string
  version: string
  bin?: string | Record<string, string>
} {
  return JSON.parse(readFileSync(join(directory, 'package.json'), 'utf8'))
}

/** A new project outside the repository: a package.json with `"type": "module"`, and the files. */
export function recipeProject(t: Cleanup, files: Map<string, string>): string {
  const directory = realpathSync(temporaryDirectory(t))
  if (!relative(REPOSITORY, directory).startsWith('..'))
    throw new Error(`${directory} is inside the repository`)
  writeFileSync(join(directory, 'package.json'), '{ "private": true, "type": "module" }\n')
  for (const [path, text] of files) {
    mkdirSync(dirname(join(directory, path)), { recursive: true })
    writeFileSync(join(directory, path), text)
  }
  return directory
}

/**
 * `npm install A B@5`, done offline: each package the repository installed is linked into the project's
 * node_modules (its own dependencies resolve from where it really is). A package the repository lacks, or
 * at a version other than the one asked for, fails: the page must name what the recipe needs.
 */
function linkPackages(project: string, specs: string[]): string[] {
  return specs.map((spec) => {
    const at = spec.indexOf('@', 1)
    const [name, version] = at === -1 ? [spec, undefined] : [spec.slice(0, at), spec.slice(at + 1)]
    const installed = installedPackage(name)
    if (installed === undefined) throw new Error(`${spec}: not installed in the repository (npm install)`)
    const found = manifestOf(installed).version
    if (version !== undefined && !`${found}.`.startsWith(`${version}.`)) {
      throw new Error(`${spec}: the repository has ${name} ${found}`)
    }
    mkdirSync(dirname(join(project, 'node_modules', name)), { recursive: true })
    symlinkSync(installed, join(project, 'node_modules', name))
    return name
  })
}

/** The script `npx <command>` runs: a linked package's bin of that name, or the only bin of a package so named. */
function binOf(project: string, linked: string[], command: string): string {
  for (const name of linked) {
    const directory = join(project, 'node_modules', name)
    const { bin } = manifestOf(directory)
    const bins = typeof bin === 'string' ? { [name.replace(/^@[^/]+\//, '')]: bin } : (bin ?? {})
    const script = bins[command] ?? (name === command ? Object.values(bins)[0] : undefined)
    if (script !== undefined) return join(directory, script)
  }
  throw new Error(`npx ${command}: no linked package has that command`)
}

/**
 * Runs a recipe's commands in order, in the project, on this Node.js: `npm install` links packages,
 * `node …` and `npx …` run their script. Resolves with the last command's standard output.
 */
export async function runCommands(
  project: string,
  commands: string[][],
  env: Record<string, string>,
): Promise<string> {
  let output = ''
  const linked: string[] = []
  for (const words of commands) {
    const [program, first = '', ...rest] = words
    if (program === 'npm' && first === 'install') {
      linked.push(
        ...linkPackages(
          project,
          rest.filter((word) => !word.startsWith('-')),
        ),
      )
      continue
    }
    const script = program === 'node' ? first : program === 'npx' ? binOf(project, linked, first) : undefined
    if (script === undefined) throw new Error(`cannot run "${words.join(' ')}" here`)
    const result = await run(process.execPath, [script, ...rest], {
      cwd: project,
      env: { PATH: process.env.PATH ?? '', HOME: project, NO_COLOR: '1', ...env },
      timeout: COMMAND_TIMEOUT_MS,
    }).catch((error: { stdout?: string; stderr?: string; message: string }) => {
      throw new Error(`${words.join(' ')} failed: ${error.message}\n${error.stdout}${error.stderr}`)
    })
    output = result.stdout
  }
  return output
}
