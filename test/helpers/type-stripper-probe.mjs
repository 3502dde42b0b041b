// Preloaded (--import) by tests into the command's process: reports at exit where the compile cache is and
// whether Node loaded its TypeScript type stripper. JavaScript on purpose: loading it strips no types.
import { getCompileCacheDir } from 'node:module'

process.on('exit', () => {
  const loaded = Reflect.get(process, 'moduleLoadList').some((/** @type {string} */ name) =>
    name.includes('amaro'),
  )
  process.stderr.write(`compile cache: ${getCompileCacheDir()}\ntype stripper loaded: ${loaded}\n`)
})
