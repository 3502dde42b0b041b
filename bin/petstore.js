#!/usr/bin/env node
// The command's entry point, and the project's one JavaScript file: it has to run before any TypeScript is
// loaded. It turns on Node's compile cache, so a start whose modules are unchanged since an earlier one
// reuses their type-stripped and compiled code, and Node never loads its type stripper, which otherwise
// holds about 17 MiB for the life of the process (docs/decisions.md, "Memory"). The cache sits next to the
// dependencies, not in the shared temporary directory, where another user could plant entries;
// NODE_COMPILE_CACHE moves it and NODE_DISABLE_COMPILE_CACHE=1 turns it off (both read by Node itself).
import { enableCompileCache } from 'node:module'
import { fileURLToPath } from 'node:url'

enableCompileCache(fileURLToPath(new URL('../node_modules/.cache/petstore', import.meta.url)))
const { runCli } = await import('../src/cli.ts')
process.exitCode = await runCli(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr })
