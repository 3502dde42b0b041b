// Preloaded (--import) by tests into the command's process: every write of the compile cache holds the event
// loop for 1.5 s, as a cold cache's synchronous flush does on a busy host. JavaScript so it strips no types.
import module, { syncBuiltinESMExports } from 'node:module'

const flush = module.flushCompileCache
module.flushCompileCache = () => {
  const until = performance.now() + 1500
  while (performance.now() < until);
  return flush()
}
syncBuiltinESMExports()
