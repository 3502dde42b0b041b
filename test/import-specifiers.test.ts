import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, isAbsolute, join, relative } from 'node:path'
import { describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'

// The linter's one-way rules (biome.json) match an import as it is written: `./../cli/x.ts` or
// `../log/../store/x.ts` would reach a room its rule refuses under a name no pattern of it matches.
const SRC = fileURLToPath(new URL('../src/', import.meta.url))

/** Every module specifier a source file names: static imports and exports, and dynamic imports. */
function specifiersOf(source: string): string[] {
  const forms = [
    /\bfrom\s+['"]([^'"]+)['"]/g,
    /\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g,
    /^import\s+['"]([^'"]+)['"]/gm,
  ]
  return forms.flatMap((form) => [...source.matchAll(form)].map((match) => match[1] as string))
}

/** `specifier` as its shortest relative form from `directory`: `./x.ts`, `../y/z.ts`. */
function shortestForm(directory: string, specifier: string): string {
  const path = relative(directory, join(directory, specifier)).split('\\').join('/')
  return path.startsWith('../') ? path : `./${path}`
}

describe('import specifiers under src/', () => {
  test('when a file imports another of the project, then the path is relative and in its shortest form, so the per-room rules see where it goes', () => {
    const files = readdirSync(SRC, { recursive: true, encoding: 'utf8' }).filter((file) =>
      file.endsWith('.ts'),
    )
    assert.ok(files.length > 100, `${files.length} files`)
    const crooked: string[] = []
    for (const file of files) {
      const directory = dirname(join(SRC, file))
      for (const specifier of specifiersOf(readFileSync(join(SRC, file), 'utf8'))) {
        if (isAbsolute(specifier) || specifier.startsWith('file:')) crooked.push(`${file}: ${specifier}`)
        else if (specifier.startsWith('.') && specifier !== shortestForm(directory, specifier))
          crooked.push(`${file}: ${specifier} (${shortestForm(directory, specifier)})`)
      }
    }
    assert.deepEqual(crooked, [])
  })

  test('when a crooked path is planted, then the check finds it', () => {
    const directory = join(SRC, 'store', 'sqlite')
    for (const specifier of ['./../postgres/postgres-store.ts', '../../log/../store/store.ts', './x/../y.ts'])
      assert.notEqual(shortestForm(directory, specifier), specifier, specifier)
    assert.equal(shortestForm(directory, '../store.ts'), '../store.ts')
    assert.equal(shortestForm(directory, './sqlite-store.ts'), './sqlite-store.ts')
  })
})
