// Preloaded (--import) by tests into the command's process: writes, as it exits, the npm packages it
// loaded, one name a line, to the file LOADED_PACKAGES_FILE names. JavaScript so it strips no types.
import { writeFileSync } from 'node:fs'
import { registerHooks } from 'node:module'

const packages = new Set()
registerHooks({
  resolve(specifier, context, nextResolve) {
    const resolved = nextResolve(specifier, context)
    const name = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(resolved.url)?.[1]
    if (name !== undefined) packages.add(name)
    return resolved
  },
})
process.on('exit', () => {
  writeFileSync(String(process.env.LOADED_PACKAGES_FILE), [...packages].sort().join('\n'))
})
