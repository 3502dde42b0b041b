import assert from 'node:assert/strict'
import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { generateApiKey } from '../src/auth/api-key.ts'
import { openFileLimit } from '../src/cli/open-file-limit.ts'
import { RestartBackoff } from '../src/cli/supervisor/restart-backoff.ts'
import { temporaryDirectory } from './helpers/cleanup.ts'
import { exitWithin, requesterFor, startServeProcess, waitForLog } from './helpers/cli-process.ts'
import {
  createPets,
  scrapeSupervisor,
  servingWorkers,
  supervisorSawDeath,
  workersAfterCreates,
} from './helpers/cluster-process.ts'

const key = generateApiKey()
const env = { API_KEYS: `ops:${key}`, WORKERS: '2' }
const request = requesterFor(key)

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

describe('restart back-off', () => {
  test('when workers crash in a burst, then each replacement waits longer; when crashes are 30 s old, then they are forgotten', () => {
    const backoff = new RestartBackoff()
    const delays = [0, 1000, 2000, 3000, 4000].map((at) => backoff.delayAfterCrash(at))
    assert.deepEqual(delays, [100, 500, 1000, 5000, 5000])
    assert.equal(backoff.remembered, 5)
    assert.equal(backoff.delayAfterCrash(30_000), 5000)
    assert.equal(backoff.remembered, 5, 'the crash at 0 s, 30 s old, is forgotten')
    assert.equal(backoff.delayAfterCrash(33_500), 1000, 'only the crashes at 4 s and 30 s are recent')
    assert.equal(backoff.remembered, 3, 'older crashes are dropped, not kept forever')
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
    const maxFds = openFileLimit(workers[0] as number)
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
    const compiled = server.output().match(/ was not initialized/g)?.length ?? 0
    // The supervisor compiles what it loads (1,353 modules), each worker finds in the cache what it loads
    // (about 990): cold workers would compile theirs too, and accept a few dozen at most between them.
    assert.ok(accepted > compiled, `${accepted} modules found in the cache, ${compiled} compiled`)
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
