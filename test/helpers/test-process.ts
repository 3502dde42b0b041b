// Loaded into every test file's process by `npm test` and `npm run test:file` (--import), before the file.
import { enableCompileCache } from 'node:module'
import { fileURLToPath } from 'node:url'
import './open-handles-guard.ts'
import './client-keep-alive.ts'

// Each test file runs in a process of its own, which would strip and compile the same modules again: with
// the cache next to the dependencies, as the command's own (bin/petstore.js), 0.3–0.4 s less a file.
enableCompileCache(fileURLToPath(new URL('../../node_modules/.cache/petstore-tests', import.meta.url)))
