// The compiler rewrites `./x.ts` to `./x.js` in the JavaScript it emits, not in the declarations: a
// consumer's compiler (or TypeScript before 5) would look for `.ts` files the package does not ship.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

const dist = new URL('../dist/', import.meta.url).pathname
for (const file of readdirSync(dist).filter((name) => name.endsWith('.d.ts'))) {
  const path = join(dist, file)
  const text = readFileSync(path, 'utf8')
  writeFileSync(path, text.replace(/(from '\.\/[\w-]+)\.ts'/g, "$1.js'"))
}
