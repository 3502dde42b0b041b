#!/usr/bin/env node
// The command's entry point, and the project's one JavaScript file: it has to run before any TypeScript is
// loaded. It turns on Node's compile cache, so a start whose modules are unchanged since an earlier one
// reuses their type-stripped and compiled code, and Node never loads its type stripper, which otherwise
// holds about 17 MiB for the life of the process (docs/decisions.md, "Memory"). The cache sits next to the
// dependencies, not in the shared temporary directory, where another user could plant entries;
// NODE_COMPILE_CACHE moves it and NODE_DISABLE_COMPILE_CACHE=1 turns it off (both read by Node itself).
// It first checks the Node.js version, importing nothing an older one lacks (a named import of
// enableCompileCache fails there before any line runs, with a SyntaxError and a stack).
import { existsSync, readFileSync } from 'node:fs'
import nodeModule from 'node:module'
import os from 'node:os'
import { fileURLToPath } from 'node:url'

const root = new URL('../', import.meta.url)
const { engines } = JSON.parse(readFileSync(new URL('package.json', root), 'utf8'))
const [needMajor = 0, needMinor = 0] = (engines.node.match(/\d+/g) ?? []).map(Number)
const [major = 0, minor = 0] = process.versions.node.split('.').map(Number)
if (major < needMajor || (major === needMajor && minor < needMinor)) {
  // `npm install` puts the project's own Node.js in node_modules/.bin, first on the PATH of npm's scripts.
  const how = existsSync(new URL('node_modules/.bin/node', root))
    ? 'npm start and npm run petstore -- <command> use the one npm install put in node_modules/.bin (or, ' +
      'in this shell: export PATH="$PWD/node_modules/.bin:$PATH")'
    : "run npm install (it installs the project's own Node.js), then npm start or npm run petstore -- <command>"
  process.stderr.write(
    `petstore: needs Node.js ${needMajor}.${needMinor} or newer, and ${process.execPath} is ${process.version}; ${how}\n`,
  )
  process.exit(1)
}

// A reader that stops early (`petstore openapi | head`) closes the pipe: the output ends there quietly, as
// any Unix tool's does, rather than with an unhandled EPIPE and its stack. Any other failure (a full disk)
// is one line below, and exit 1. The command runs on to its end either way: one whose output is the only
// copy (`keys create`'s key) learns of the failure from its own write, and acts on it.
/** @type {NodeJS.ErrnoException | undefined} */
let stdoutFailure
process.stdout.on('error', (/** @type {NodeJS.ErrnoException} */ error) => {
  stdoutFailure ??= error
})

// Stderr is where a process tells what nothing else can: once its reader is gone, nobody is left to tell,
// and a command goes on (a server keeps serving: Node's debug output and warnings write there).
process.stderr.on('error', () => {})

// As PID 1 (a container's entry point) the process would ignore a stop signal it has no handler for: a
// stop during start-up (migrations, a database still to reach) would wait for the SIGKILL. Until a command
// handles the signal itself (a server's drain, copy's stop), it ends the process as it ends any other.
if (process.pid === 1) {
  for (const signal of /** @type {const} */ (['SIGTERM', 'SIGINT', 'SIGHUP'])) {
    process.on(signal, () => {
      if (process.listenerCount(signal) === 1) process.exit(128 + (os.constants.signals[signal] ?? 0))
    })
  }
}

nodeModule.enableCompileCache(fileURLToPath(new URL('node_modules/.cache/petstore', root)))
const { runCli } = await import('../src/cli/run-cli.ts')
process.exitCode = await runCli(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr })
// A write still queued on a pipe fails only once tried: its end is waited for, a second at most.
if (process.exitCode === 0) {
  await new Promise((resolve) => {
    setTimeout(resolve, 1000).unref()
    process.stdout.write('', resolve)
  })
}
// Its 'error' event may come only after the command has returned: the stream's own record then says it.
const failure = stdoutFailure ?? /** @type {NodeJS.ErrnoException | null} */ (process.stdout.errored)
if (failure && failure.code !== 'EPIPE' && process.exitCode === 0) {
  const why = failure.code ?? failure.message
  process.stderr.write(`petstore: standard output could not be written (${why}): the output is incomplete\n`)
  process.exitCode = 1
}
// A command that failed has nothing left to do, and ends: whatever it left open would keep the process
// alive, serving nothing — an IPC channel (a WORKERS worker that could not start, another manager's fork
// mode), or a database login the server keeps half-done until its own timeout (a minute). Once stderr has
// taken the reason, and stdout its output (an exit drops writes still queued on a full pipe); a second at
// most if nobody reads them.
if (process.exitCode !== 0) {
  setTimeout(() => process.exit(), 1000).unref()
  let draining = 2
  const drained = () => {
    if (--draining === 0) process.exit()
  }
  process.stdout.write('', drained)
  process.stderr.write('', drained)
}
