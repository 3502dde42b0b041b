import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { copyFileSync, mkdirSync, readFileSync, renameSync, symlinkSync, writeFileSync } from 'node:fs'
import { type AddressInfo, createServer } from 'node:net'
import { availableParallelism } from 'node:os'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { generateApiKey } from '../src/auth/api-key.ts'
import { workerNodeFlags } from '../src/cli/supervisor/worker-node-flags.ts'
import { waitUntil, within } from './helpers/bounded-wait.ts'
import { temporaryDirectory } from './helpers/cleanup.ts'
import {
  CLI,
  cliEnvironment,
  exitWithin,
  type LogLine,
  startServeProcess,
  waitForLog,
} from './helpers/cli-process.ts'
import { scrapeSupervisor, serveWorkers, servingWorkers } from './helpers/cluster-process.ts'
import { v8HelperThreads } from './helpers/process-threads.ts'

const env = { API_KEYS: `ops:${generateApiKey()}`, WORKERS: '2' }

describe('worker start', () => {
  test('when a replacement worker cannot open the store, then it exits and is tried again after each pause it says, the pauses growing, each said at warn and counted as not_started rather than as a crash, until one serves', {
    timeout: 60_000,
  }, async (t) => {
    const cwd = temporaryDirectory(t)
    mkdirSync(join(cwd, 'db'))
    const server = await startServeProcess({ ...env, DATABASE_URL: 'sqlite:db/petstore.db' }, cwd)
    t.after(() => server.child.kill('SIGKILL'))
    const [first] = (await servingWorkers(server, 2)) as [number, number]
    // Not the default path: no worker creates the directory again, each fails opening it.
    renameSync(join(cwd, 'db'), join(cwd, 'db.away'))
    process.kill(first, 'SIGKILL')
    await waitForLog(server, (lines) =>
      lines.find((line) => line.msg === 'a worker died; replacing it' && line.worker === first),
    )
    const notStarted = await waitForLog(
      server,
      (lines) => {
        const found = lines.filter(
          (line) => line.msg === 'a replacement worker could not start; trying again',
        )
        return found.length >= 3 ? found : undefined
      },
      20_000,
    )
    // `exitCode`, not `code`: the request lines' `code` is a string, and one field has one type in an index.
    for (const line of notStarted.slice(0, 3)) {
      assert.deepEqual([line.level, line.cause, line.exitCode], [40, 'not_started', 1])
    }
    // Each pause is kept, and grows: the next replacement failed no sooner than the pause said.
    const [one, two, three] = notStarted as [LogLine, LogLine, LogLine]
    assert.ok(Number(two.restartInMs) > Number(one.restartInMs), JSON.stringify([one, two]))
    for (const [said, next] of [
      [one, two],
      [two, three],
    ] as const) {
      const gapMs = Number(next.time) - Number(said.time)
      assert.ok(gapMs >= Number(said.restartInMs), `${gapMs} ms after "restartInMs":${said.restartInMs}`)
    }
    const outage = await scrapeSupervisor(server)
    assert.equal(outage.get('petstore_worker_restarts_total{cause="died"}'), 1, 'the kill alone')
    // Each says why, on stderr, which the supervisor writes apart from its log: waited for, not assumed.
    await waitUntil(
      () => (server.output().match(/petstore serve: DATABASE_URL names a file in /g)?.length ?? 0) >= 2,
      () => `each replacement did not say why:\n${server.output()}`,
      { timeoutMs: 5000, everyMs: 20 },
    )
    renameSync(join(cwd, 'db.away'), join(cwd, 'db'))
    const serving = await servingWorkers(server, 3)
    assert.equal(serving.length, 3, 'a replacement serves once the store is back')
    const after = await scrapeSupervisor(server)
    assert.ok(Number(after.get('petstore_worker_restarts_total{cause="not_started"}')) >= 2)
    assert.equal(after.get('petstore_worker_restarts_total{cause="died"}'), 1)
    server.child.kill('SIGTERM')
    assert.equal(await exitWithin(server), 0)
  })

  // V8's helpers run collections beside a worker's main thread: more of them than its cores take the core
  // from it (docs/decisions.md, "V8's helper threads").
  test("when WORKERS is 2, then each worker is given V8 helper threads for its share of the cores less its own thread, one at least, whatever the supervisor's", async (t) => {
    const cwd = temporaryDirectory(t)
    const server = await startServeProcess({ ...env, DATABASE_URL: 'sqlite:petstore.db' }, cwd)
    t.after(() => server.child.kill('SIGKILL'))
    const share = Math.max(1, Math.floor(availableParallelism() / 2) - 1)
    for (const pid of await servingWorkers(server, 2)) {
      const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')
      assert.equal(
        argv.filter((flag) => flag.startsWith('--v8-pool-size=')).at(-1),
        `--v8-pool-size=${share}`,
      )
      assert.equal(v8HelperThreads(pid), share, `worker ${pid}: ${argv.join(' ')}`)
    }
    server.child.kill('SIGTERM')
    assert.equal(await exitWithin(server), 0)
  })

  test('when the machine has more cores, then the share grows with them, and a size the operator gave the supervisor is kept', () => {
    assert.deepEqual(workerNodeFlags(['--max-semi-space-size=16'], 2, 16), [
      '--max-semi-space-size=16',
      '--v8-pool-size=7',
    ])
    assert.deepEqual(workerNodeFlags(['--v8-pool-size=0'], 16, 16), ['--v8-pool-size=0', '--v8-pool-size=1'])
    assert.deepEqual(workerNodeFlags(['--v8-pool-size=0', '--v8-pool-size=3'], 4, 16), [
      '--v8-pool-size=0',
      '--v8-pool-size=3',
    ])
  })

  test("when the release the service started from is switched under its path (an upgrade's ln -sfn), then a replacement worker still runs the supervisor's release", {
    timeout: 60_000,
  }, async (t) => {
    const cwd = temporaryDirectory(t)
    const repository = fileURLToPath(new URL('..', import.meta.url))
    // Release a: this one, its entry a file of its own so that the release's path is the entry's.
    mkdirSync(join(cwd, 'a', 'bin'), { recursive: true })
    copyFileSync(CLI, join(cwd, 'a', 'bin', 'petstore.js'))
    for (const part of ['src', 'node_modules', 'package.json'])
      symlinkSync(join(repository, part), join(cwd, 'a', part))
    // Release b: one that says so and cannot serve.
    mkdirSync(join(cwd, 'b', 'bin'), { recursive: true })
    writeFileSync(
      join(cwd, 'b', 'bin', 'petstore.js'),
      "process.stderr.write('release b\\n')\nprocess.exit(1)\n",
    )
    symlinkSync('a', join(cwd, 'current'))
    const server = await startServeProcess({ ...env, DATABASE_URL: 'sqlite:petstore.db' }, cwd, {
      cli: join(cwd, 'current', 'bin', 'petstore.js'),
    })
    t.after(() => server.child.kill('SIGKILL'))
    const [first] = (await servingWorkers(server, 2)) as [number, number]
    symlinkSync('b', join(cwd, 'next'))
    renameSync(join(cwd, 'next'), join(cwd, 'current'))
    process.kill(first, 'SIGKILL')
    const serving = await servingWorkers(server, 3)
    assert.equal(serving.length, 3, 'the replacement serves')
    assert.doesNotMatch(server.output(), /release b/)
    server.child.kill('SIGTERM')
    assert.equal(await exitWithin(server), 0)
  })

  test('when a worker is started by another cluster manager, then it refuses to start, saying why, rather than write its log to a descriptor it opened itself', async (t) => {
    // A primary of its own, as PM2's cluster mode is: it forks `serve` with Node's default descriptors.
    const primary = `
      const cluster = require('node:cluster')
      const stdio = ['ignore', 'inherit', 'inherit', 'ipc']
      cluster.setupPrimary({ exec: ${JSON.stringify(CLI)}, args: ['serve'], execArgv: [], stdio })
      cluster.fork().on('exit', (code) => process.exit(code ?? 99))`
    const { output, closed } = serveWorkers(t, env, ['-e', primary])
    const said = () => `${output.stdout}${output.stderr}`
    // Closed, not only exited: the reason is written just before the exit, and must have been read.
    const [code] = await within(closed, 15_000, () => `the worker did not exit:\n${said()}`)
    assert.equal(code, 1, said())
    assert.match(output.stderr, /petstore serve: a worker must be started by "petstore serve" with WORKERS/)
  })

  test('when a command fails in a process with an IPC channel while stderr is backed up, then its reason still gets out before it exits', async (t) => {
    // Module loading under NODE_DEBUG queues more on stderr than a pipe holds, before the reason.
    const child = spawn(process.execPath, [CLI, 'serve'], {
      env: cliEnvironment({ ...env, PORT: 'not-a-port', NODE_DEBUG: 'module' }),
      cwd: temporaryDirectory(t),
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    })
    t.after(() => child.kill('SIGKILL'))
    const closed = once(child, 'close')
    await sleep(500)
    let stderr = ''
    child.stderr?.setEncoding('utf8').on('data', (text: string) => {
      stderr += text
    })
    const [code] = await within(closed, 15_000, () => `no exit:\n${stderr.slice(-2000)}`)
    assert.equal(code, 78)
    assert.match(stderr, /petstore: invalid configuration: PORT/, `${stderr.length} characters read`)
  })

  test('when no worker can start (the port is taken), then the service exits 1 saying why, as a single process does, rather than replace them for ever', {
    timeout: 60_000,
  }, async (t) => {
    const holder = createServer()
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve))
    t.after(() => holder.close())
    const port = String((holder.address() as AddressInfo).port)
    const { output, closed } = serveWorkers(t, { ...env, PORT: port })
    const [code] = await within(
      closed,
      20_000,
      () => `the service did not exit:\n${output.stdout}${output.stderr}`,
    )
    assert.equal(code, 1, `${output.stdout}${output.stderr}`)
    assert.match(output.stderr, /petstore serve: .*EADDRINUSE/)
    const died = output.stdout.split('\n').filter((line) => line.includes('a worker died; replacing it'))
    assert.deepEqual(died, [], 'no worker replaced')
    const said = output.stdout.split('\n').filter((line) => line.includes('a worker could not start'))
    assert.equal(said.length, 1, `the supervisor said why it stops:\n${output.stdout}`)
    assert.equal(JSON.parse(said[0] as string).exitCode, 1)
  })

  test('when WORKERS asks for more workers than the CPUs available, then the start says so at warn, and serves all the same', async (t) => {
    const cpus = availableParallelism()
    const server = await startServeProcess({ ...env, WORKERS: String(cpus + 1) }, temporaryDirectory(t))
    t.after(() => server.child.kill('SIGKILL'))
    const said = await waitForLog(server, (lines) =>
      lines.find((line) => String(line.msg).startsWith('WORKERS is above the CPUs available')),
    )
    assert.deepEqual([said.level, said.workers, said.cpus], [40, cpus + 1, cpus])
    await servingWorkers(server, cpus + 1)
    server.child.kill('SIGTERM')
    assert.equal(await exitWithin(server), 0)
  })
})
