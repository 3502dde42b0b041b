import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, test } from 'node:test'
import { UNSUPPORTED_ENGINE } from '../packages/client/src/exact-json.ts'

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
