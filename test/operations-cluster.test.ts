import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { generateApiKey } from '../src/auth/api-key.ts'
import { RestartBackoff } from '../src/cli/supervisor/restart-backoff.ts'
import { waitFor, within } from './helpers/bounded-wait.ts'
import { temporaryDirectory } from './helpers/cleanup.ts'
import {
  CLI,
  cliEnvironment,
  exitWithin,
  logLines,
  requesterFor,
  type ServeProcess,
  startServeProcess,
  waitForLog,
} from './helpers/cli-process.ts'
import {
  createPets,
  killIfRunning,
  scrapeSupervisor,
  serveWorkers,
  servingWorkers,
  workersAfterCreates,
} from './helpers/cluster-process.ts'

const key = generateApiKey()
const env = { API_KEYS: `ops:${key}`, WORKERS: '2' }
const request = requesterFor(key)

/**
 * Waits for the supervisor to log that the worker `pid` died (a crash, a kill) or, with `how` 'stopped',
 * that it stopped cleanly (a stop signal sent to it alone).
 */
function supervisorSawDeath(server: ServeProcess, pid: number, how: 'died' | 'stopped' = 'died') {
  return waitForLog(server, (lines) =>
    lines.find((line) => line.msg === `a worker ${how}; replacing it` && line.worker === pid),
  )
}

/** Prometheus text exposition: the summed value of samples named `name` whose labels include `labels`. */
function sampleSum(exposition: string, name: string, labels = ''): number {
  let sum = 0
  for (const line of exposition.split('\n')) {
    if (line === '' || line.startsWith('#')) continue
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$/.exec(line)
    assert.ok(match, `not exposition format: ${line}`)
    if (match[1] === name && (match[2] ?? '').includes(labels)) sum += Number(match[3])
  }
  return sum
}

/** A stopped worker is not ended by its supervisor's death; the test ends it if the supervisor did not. */
describe('restart back-off', () => {
  test('when workers crash in a burst, then each replacement waits longer; when crashes are 30 s old, then they are forgotten', () => {
    const backoff = new RestartBackoff()
    const delays = [0, 1000, 2000, 3000, 4000].map((at) => backoff.delayAfterCrash(at))
    assert.deepEqual(delays, [100, 500, 1000, 5000, 5000])
    assert.equal(backoff.remembered, 5)
    assert.equal(backoff.delayAfterCrash(33_500), 500, 'only the crash at 4 s is recent')
    assert.equal(backoff.remembered, 2, 'older crashes are dropped, not kept forever')
    assert.equal(backoff.delayAfterCrash(100_000), 100)
    assert.equal(backoff.remembered, 1)
  })
})

describe('all cores', () => {
  test('when WORKERS=2 serve one SQLite file under concurrent writes, then both serve, there is no 5xx, and the supervisor counts every create', async (t) => {
    const server = await startServeProcess(env, temporaryDirectory(t))
    t.after(() => server.child.kill('SIGKILL'))
    const workers = await servingWorkers(server, 2)
    const alone = await waitForLog(server, (lines) =>
      lines.find((line) => /counts the rate limit alone/.test(String(line.msg))),
    )
    assert.equal(alone.level, 40, 'said at warn: without REDIS_URL, a key gets the limit once per worker')
    assert.equal(alone.workers, 2)
    const sent = 300
    await createPets(server, request, sent, 'c')
    const creates = await waitForLog(server, (lines) => {
      const found = lines.filter((line) => line.msg === 'request' && line.operation === 'createPet')
      return found.length === sent ? found : undefined
    })
    assert.deepEqual(
      [...new Set(creates.map((line) => line.pid))].sort(),
      [...workers].sort(),
      'each worker handled some of the requests',
    )

    const { metricsPort } = await waitForLog(server, (lines) =>
      lines.find((line) => line.msg === 'supervising workers'),
    )
    const response = await fetch(`http://127.0.0.1:${metricsPort}/metrics`)
    const scrape = await response.text()
    assert.equal(response.status, 200, scrape)
    const counted = 'operation="createPet",status="201"'
    assert.equal(sampleSum(scrape, 'petstore_http_request_duration_seconds_count', counted), sent)
    assert.equal(sampleSum(scrape, 'petstore_pets_created_total'), sent)
    // What runs, said once for the service: the workers' samples are one release's, never summed.
    assert.equal(sampleSum(scrape, 'petstore_build_info'), 1)
    // A limit of each process, not a quantity the workers share: the same for all, never their sum.
    const limits = readFileSync(`/proc/${workers[0]}/limits`, 'utf8')
    const maxFds = Number(/^Max open files\s+(\d+)/m.exec(limits)?.[1])
    assert.equal(sampleSum(scrape, 'process_max_fds'), maxFds)
    server.child.kill('SIGTERM')
    assert.equal(await exitWithin(server), 0)
  })

  test("when the compile cache begins empty (as systemd's does at every start), then the workers start warm from what the supervisor loaded", async (t) => {
    const cwd = temporaryDirectory(t)
    // Node says of each module whether it found it in the cache ("accepted") or compiled it.
    const cached = { NODE_COMPILE_CACHE: join(cwd, 'compile-cache'), NODE_DEBUG_NATIVE: 'COMPILE_CACHE' }
    const server = await startServeProcess({ ...env, ...cached }, cwd)
    t.after(() => server.child.kill('SIGKILL'))
    await servingWorkers(server, 2)
    const accepted = server.output().match(/ accepted/g)?.length ?? 0
    // About 1,150 modules each; a cold worker accepts a few dozen at most (what another wrote meanwhile).
    assert.ok(accepted > 2 * 1000, `${accepted} modules found in the cache by the workers`)
  })

  test('when a worker is killed, then the supervisor starts a replacement that serves, and counts the restart', async (t) => {
    const server = await startServeProcess(env, temporaryDirectory(t))
    t.after(() => server.child.kill('SIGKILL'))
    const [first, second] = (await servingWorkers(server, 2)) as [number, number]
    process.kill(first, 'SIGKILL')
    await supervisorSawDeath(server, first)
    const replacement = (await servingWorkers(server, 3))[2] as number
    assert.ok(![first, second].includes(replacement), 'a new process')

    // With the other original worker gone too, whatever answers is a replacement: the first's, or the
    // second's own, started after a longer pause (a loaded host may reach it before the first request).
    process.kill(second, 'SIGKILL')
    await supervisorSawDeath(server, second)
    for (let i = 0; i < 10; i++) {
      const response = await request(server, '/v1/pets', { headers: { 'x-request-id': `after-kill-${i}` } })
      assert.equal(response.status, 200)
    }
    const servedBy = await waitForLog(server, (lines) => {
      const found = lines.filter((line) => String(line.reqId).startsWith('after-kill-'))
      return found.length === 10 ? new Set(found.map((line) => line.pid)) : undefined
    })
    const replacements = (await servingWorkers(server, 3)).filter((pid) => pid !== first && pid !== second)
    assert.ok(replacements.includes(replacement))
    for (const pid of servedBy)
      assert.ok(replacements.includes(pid as number), `served by ${pid}, not a replacement`)
    // Counted as each replacement starts: the second's, after its longer pause, too.
    await servingWorkers(server, 4)
    const samples = await scrapeSupervisor(server)
    assert.equal(samples.get('petstore_worker_restarts_total{cause="died"}'), 2)
    assert.equal(samples.get('petstore_worker_restarts_total{cause="stopped"}'), 0)
    server.child.kill('SIGTERM')
    assert.equal(await exitWithin(server), 0)
  })
})

describe('a worker stopped alone', () => {
  test('when SIGTERM reaches one worker, then it drains, its counts stay in the summed metrics, and it is replaced and counted as a stop, not a crash', async (t) => {
    const sent = 200
    const { server, creator } = await workersAfterCreates(t, env, request, sent)
    process.kill(creator, 'SIGTERM')
    const exit = await supervisorSawDeath(server, creator, 'stopped')
    assert.deepEqual([exit.exitCode, exit.level], [0, 40], 'a stop, said at warn')
    await servingWorkers(server, 3)
    const samples = await scrapeSupervisor(server)
    assert.equal(samples.get('petstore_pets_created_total'), sent, "the stopped worker's creates are kept")
    assert.equal(samples.get('petstore_worker_restarts_total{cause="stopped"}'), 1)
    assert.equal(samples.get('petstore_worker_restarts_total{cause="died"}'), 0)
    server.child.kill('SIGTERM')
    assert.equal(await exitWithin(server), 0)
  })
})

describe('one configuration', () => {
  test('when .env is edited, or made unreadable, while the service runs, then replacement workers run on the settings the service started with, as their siblings do', async (t) => {
    const cwd = temporaryDirectory(t)
    writeFileSync(join(cwd, '.env'), 'RATE_LIMIT_PER_MINUTE=0\n')
    const server = await startServeProcess(env, cwd)
    t.after(() => server.child.kill('SIGKILL'))
    const [first, second] = (await servingWorkers(server, 2)) as [number, number]
    // Edited for the next start: a value changed, and a setting the file did not name before.
    writeFileSync(join(cwd, '.env'), 'RATE_LIMIT_PER_MINUTE=1\nDOCS=off\n')
    // One at a time: with PORT=0, the port stays the same only while a worker holds it.
    for (const [pid, serving] of [
      [first, 3],
      [second, 4],
    ] as const) {
      process.kill(pid, 'SIGKILL')
      await supervisorSawDeath(server, pid)
      await servingWorkers(server, serving)
    }
    for (let i = 0; i < 5; i++) {
      const response = await request(server, '/v1/pets')
      assert.equal(response.status, 200, 'no rate limit: the one the service started with is off')
      assert.equal(response.headers.get('ratelimit-limit'), null)
    }
    const docs = await fetch(`${server.origin}/docs`, { redirect: 'manual' })
    assert.notEqual(docs.status, 404, 'the docs page, on by default, is still served')
    // A .env no one can read any more (a directory in its place) stops no replacement: none reads it.
    rmSync(join(cwd, '.env'))
    mkdirSync(join(cwd, '.env'))
    const replacement = (await servingWorkers(server, 4))[2] as number
    process.kill(replacement, 'SIGKILL')
    await supervisorSawDeath(server, replacement)
    await servingWorkers(server, 5)
    assert.equal((await request(server, '/v1/pets')).status, 200)
    server.child.kill('SIGTERM')
    assert.equal(await exitWithin(server), 0)
  })
})

describe('worker output', () => {
  test("when LOG_FORMAT=pretty, then every worker writes its lines for people on the service's stdout, none on its stderr", async (t) => {
    const { child, output, stop } = serveWorkers(t, { ...env, LOG_FORMAT: 'pretty' })
    const serving = await waitFor(
      () => {
        const pids = [...output.stdout.matchAll(/INFO \((\d+)\): serving http/g)].map((match) => match[1])
        return new Set(pids).size === 2 ? pids : undefined
      },
      () => `two workers did not say they serve on stdout:\n${output.stdout}\nstderr:\n${output.stderr}`,
      { timeoutMs: 15_000, everyMs: 20 },
    )
    assert.ok(!serving.includes(String(child.pid)), 'the supervisor does not serve')
    assert.ok(!output.stdout.includes('{"level"'), `a JSON line:\n${output.stdout}`)
    assert.equal(output.stderr, '')
    assert.deepEqual(await stop(), [0, null])
  })

  test("when workers print outside their log (NODE_DEBUG=http), then every line reaches the service's stderr whole, one for every answer, and stdout holds only log lines", async (t) => {
    const { output, stop } = serveWorkers(t, { ...env, NODE_DEBUG: 'http' })
    const origin = await waitFor(
      () => {
        const serving = output.stdout.match(/serving http:\/\/[\d.]+:\d+/g) ?? []
        return serving.length === 2 ? serving[0]?.slice('serving '.length) : undefined
      },
      () => `two workers did not say they serve:\n${output.stdout}\nstderr:\n${output.stderr}`,
      { timeoutMs: 15_000, everyMs: 20 },
    )
    // A connection each, so that both workers answer, their debug lines written at the same moments.
    const answers = await Promise.all(
      Array.from({ length: 200 }, () => fetch(`${origin}/healthz`, { headers: { connection: 'close' } })),
    )
    assert.deepEqual(new Set(answers.map((answer) => answer.status)), new Set([200]))
    assert.deepEqual(await stop(), [0, null])
    const lines = output.stderr.split('\n')
    assert.equal(lines.pop(), '', 'the last line is ended')
    const mixed = lines.filter((line) => !/^(HTTP \d+: |\(node:\d+\) Warning: |\(Use `node )/.test(line))
    assert.deepEqual(mixed, [], 'lines cut or run together')
    const ended = lines.filter((line) => line.endsWith(': outgoing message end.'))
    assert.equal(ended.length, 200, 'a debug line for every answer')
    assert.equal(new Set(ended.map((line) => line.split(':')[0])).size, 2, 'both workers answered')
    for (const line of output.stdout.trimEnd().split('\n')) assert.ok(line.startsWith('{"level"'), line)
  })

  test("when the service's stderr is gone, then the workers' output it could not pass on is counted in the supervisor's metrics and said in its log, pretty included", {
    timeout: 60_000,
  }, async (t) => {
    // A replacement worker's module loading (NODE_DEBUG) is output the supervisor relays and must drop.
    const { child, output, stop } = serveWorkers(t, { ...env, LOG_FORMAT: 'pretty', NODE_DEBUG: 'module' })
    const { pids, metricsPort } = await waitFor(
      () => {
        const serving = [...output.stdout.matchAll(/INFO \((\d+)\): serving http/g)].map((match) => match[1])
        const port = /metricsPort: (\d+)/.exec(output.stdout)?.[1]
        return serving.length === 2 && port ? { pids: serving.map(Number), metricsPort: port } : undefined
      },
      () => `two workers did not say they serve, or no metrics port:\n${output.stdout}`,
      { timeoutMs: 15_000, everyMs: 20 },
    )
    assert.match(output.stderr, new RegExp(`^MODULE ${pids[0]}: `, 'm'), 'the workers wrote debug lines')
    // The reader is gone: every write to the service's stderr fails with EPIPE from now on.
    child.stderr.destroy()
    process.kill(pids[0] as number, 'SIGKILL')
    const said = await waitFor(
      () =>
        /WARN \((\d+)\): workers' output dropped: standard error did not keep up\n\s+droppedLines: (\d+)/.exec(
          output.stdout,
        ) ?? undefined,
      () => `no warning of the dropped lines:\n${output.stdout}`,
      { timeoutMs: 25_000, everyMs: 200 },
    )
    assert.equal(Number(said[1]), child.pid, 'said by the supervisor')
    const warned = Number(said[2])
    assert.ok(warned > 0, said[0])
    const scrape = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text()
    const counted = Number(/^petstore_worker_output_lines_dropped_total (\d+)$/m.exec(scrape)?.[1])
    assert.ok(counted >= warned, `${counted} counted in the metrics, ${warned} said in the log`)
    // Stdout is read: no log line was lost, and the log's counter says so.
    assert.match(scrape, /^petstore_log_lines_dropped_total 0$/m)
    assert.deepEqual(await stop(), [0, null])
  })

  test("when its stdout is a terminal, then workers' lines are coloured as the supervisor's are", async (t) => {
    // `script` gives the service a terminal of its own (a pseudo-terminal) and copies it to a pipe.
    const serve = [process.execPath, CLI, 'serve'].map((word) => `'${word}'`).join(' ')
    const child = spawn('script', ['--quiet', '--return', '--command', serve, '/dev/null'], {
      env: cliEnvironment({ ...env, HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info', TERM: 'xterm' }),
      cwd: temporaryDirectory(t),
      stdio: ['pipe', 'pipe', 'pipe'],
    })
    t.after(() => child.kill('SIGKILL'))
    let terminal = ''
    child.stdout.setEncoding('utf8').on('data', (text: string) => {
      terminal += text
    })
    // No `script` (util-linux) on the machine: the wait below fails saying so.
    child.on('error', (error) => {
      terminal += `${error}`
    })
    const serving = await waitFor(
      () => {
        const lines = terminal.split('\n').filter((line) => line.includes('serving http'))
        return lines.length === 2 ? lines : undefined
      },
      () => `two workers did not say they serve:\n${terminal}`,
      { timeoutMs: 15_000, everyMs: 20 },
    )
    for (const line of serving) assert.ok(line.includes('\u001b['), `not coloured: ${JSON.stringify(line)}`)
    const supervisor = /\((\d+)\): [^\n]*supervising workers/.exec(terminal)?.[1]
    assert.ok(supervisor, `no supervisor line:\n${terminal}`)
    const exited = once(child, 'exit')
    process.kill(Number(supervisor), 'SIGTERM')
    assert.deepEqual(await within(exited, 10_000, () => `no exit:\n${terminal}`), [0, null])
  })
})

describe('supervisor shutdown', () => {
  test('when SIGHUP reaches the supervisor and its workers (their terminal closed), then they drain and it exits 0', async (t) => {
    const server = await startServeProcess(env, temporaryDirectory(t))
    t.after(() => server.child.kill('SIGKILL'))
    const workers = await servingWorkers(server, 2)
    // A terminal's hang-up reaches its whole process group: the supervisor and every worker. Which of its
    // hang-up and the supervisor's SIGTERM a worker takes first is the kernel's choice: either drains it.
    for (const pid of [...workers, server.child.pid as number]) process.kill(pid, 'SIGHUP')
    assert.equal(await exitWithin(server), 0, server.output())
    assert.doesNotMatch(server.output(), /did not stop cleanly|a worker died/)
    const drained = logLines(server).filter((line) => line.msg === 'shutting down')
    assert.deepEqual(drained.map((line) => line.pid).sort(), [...workers].sort(), server.output())
    // The supervisor's own last line says the stop finished, as a lone process's does.
    const own = logLines(server).filter((line) => line.pid === server.child.pid)
    const last = own.at(-1)
    assert.deepEqual([last?.level, last?.msg, last?.signal], [30, 'stopped', 'SIGHUP'], server.output())
    assert.ok(Number(last?.durationMs) >= 0, server.output())
  })

  test('when SIGHUP reaches a worker, then it drains and exits 0 of itself rather than being killed by it', async (t) => {
    const server = await startServeProcess(env, temporaryDirectory(t))
    t.after(() => server.child.kill('SIGKILL'))
    const [worker] = (await servingWorkers(server, 2)) as [number, number]
    // Alone, so that its own handler is what ends it (in a group, the supervisor's SIGTERM may come first).
    process.kill(worker, 'SIGHUP')
    const exit = await supervisorSawDeath(server, worker, 'stopped')
    assert.deepEqual([exit.exitCode, exit.signal], [0, null], server.output())
    const own = logLines(server).find((line) => line.pid === worker && line.msg === 'shutting down')
    assert.equal(own?.signal, 'SIGHUP', server.output())
    server.child.kill('SIGTERM')
    assert.equal(await exitWithin(server), 0, server.output())
  })

  test('when a worker dies while the others drain, then the supervisor exits 1', async (t) => {
    const server = await startServeProcess(env, temporaryDirectory(t))
    t.after(() => server.child.kill('SIGKILL'))
    const [failing] = (await servingWorkers(server, 2)) as [number, number]
    // Stopped, it cannot drain and exit 0 before it is killed below; a crash mid-drain, deterministically.
    process.kill(failing, 'SIGSTOP')
    t.after(() => killIfRunning(failing))
    const started = Date.now()
    server.child.kill('SIGTERM')
    await waitForLog(server, (lines) => lines.find((line) => line.msg === 'stopping workers'))
    process.kill(failing, 'SIGKILL')
    assert.equal(await exitWithin(server), 1)
    assert.ok(Date.now() - started < 5000, 'at once, not after the shutdown deadline')
    assert.match(server.output(), /a worker did not stop cleanly/)
    const own = logLines(server).filter((line) => line.pid === server.child.pid)
    assert.equal(
      own.filter((line) => line.msg === 'stopped').length,
      0,
      'a stop that lost a worker is no clean stop',
    )
  })

  // A timeout of its own: without the bound, the supervisor would wait for the stuck worker forever.
  test('when a worker does not stop, then the supervisor kills it after SHUTDOWN_TIMEOUT_MS and a margin, and exits 1', {
    timeout: 20_000,
  }, async (t) => {
    const server = await startServeProcess({ ...env, SHUTDOWN_TIMEOUT_MS: '200' }, temporaryDirectory(t))
    t.after(() => server.child.kill('SIGKILL'))
    const [stuck] = (await servingWorkers(server, 2)) as [number, number]
    process.kill(stuck, 'SIGSTOP')
    t.after(() => killIfRunning(stuck))
    const started = Date.now()
    server.child.kill('SIGTERM')
    assert.equal(await exitWithin(server, 15_000), 1)
    const waited = Date.now() - started
    assert.ok(waited >= 200 + 5000 - 100 && waited < 200 + 5000 + 3000, `waited ${waited} ms`)
    assert.match(server.output(), /a worker did not stop in time; killing it/)
  })
})
