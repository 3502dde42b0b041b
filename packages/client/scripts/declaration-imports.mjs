// The compiler rewrites `./x.ts` to `./x.js` in the JavaScript it emits, not in the declarations: a
// consumer's compiler (or TypeScript before 5) would look for `.ts` files the package does not ship.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

// A relative specifier ending in `.ts`, in either quotes: `from './x.ts'`, `import("../y.ts")`.
const TS_SPECIFIER = /(['"])(\.{1,2}\/[^'"]*?)\.ts\1/g

const dist = fileURLToPath(new URL('../dist/', import.meta.url))
for (const file of readdirSync(dist, { recursive: true, encoding: 'utf8' })) {
  if (!file.endsWith('.d.ts')) continue
  const path = join(dist, file)
  const rewritten = readFileSync(path, 'utf8').replace(TS_SPECIFIER, '$1$2.js$1')
  writeFileSync(path, rewritten)
  if (TS_SPECIFIER.test(rewritten)) throw new Error(`${path} still imports a .ts file`)
}
