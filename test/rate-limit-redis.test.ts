import assert from 'node:assert/strict'
import { once } from 'node:events'
import { existsSync } from 'node:fs'
import { createConnection } from 'node:net'
import { join } from 'node:path'
import { describe, type TestContext, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { Redis } from 'ioredis'
import pino from 'pino'
import { connectRedis } from '../src/admission/rate-limit/redis-connection.ts'
import { generateApiKey, storedFormOf } from '../src/auth/api-key.ts'
import { createLogger } from '../src/log/logger.ts'
import { createMetrics } from '../src/metrics/metrics.ts'
import { call } from './helpers/api-client.ts'
import { waitUntil, within } from './helpers/bounded-wait.ts'
import { temporaryDirectory } from './helpers/cleanup.ts'
import { runCliAsync } from './helpers/cli-async.ts'
import {
  type LogLine,
  logLines,
  requesterFor,
  type ServeProcess,
  startServeProcess,
  stop,
  waitForLog,
} from './helpers/cli-process.ts'
import { checkedFetch } from './helpers/conformance-fetch.ts'
import { connected, redisSuiteOptions, startRedis } from './helpers/redis-server.ts'
import { sqliteEngine } from './helpers/store-engines.ts'
import { startTcpProxy, trackedServer } from './helpers/tcp-proxy.ts'
import { startTestServer } from './helpers/test-server.ts'

const log = createLogger({ level: 'silent' })

/** The value of a metric without labels, as the registry serves it. */
async function metricValue(metrics: ReturnType<typeof createMetrics>, name: string): Promise<number> {
  const found = new RegExp(`^${name} (\\S+)$`, 'm').exec(await metrics.registry.metrics())
  assert.ok(found, `${name} is served`)
  return Number(found[1])
}

/** A throwaway Redis and a client connected to it, whose log (and any given the same logger) is kept in `lines`. */
async function redisLoggingTo(t: TestContext) {
  const redisServer = await startRedis()
  t.after(() => redisServer.stop())
  const lines: Array<Record<string, unknown>> = []
  const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) })
  const connection = await connectRedis(redisServer.url, logger)
  const redis = connection.client
  t.after(() => redis.disconnect())
  // connectRedis resolves once connected, or a second later while still trying (a loaded machine).
  await connected(redis)
  return { redisServer, lines, logger, redis, connection }
}

/** A throwaway Redis, and a test server counting rate limits (`perMinute`) in it, logging to `lines`. */
async function serverLoggingTo(t: TestContext, perMinute: number) {
  const { redisServer, lines, logger, redis, connection } = await redisLoggingTo(t)
  const server = await startTestServer(t, {
    env: { RATE_LIMIT_PER_MINUTE: String(perMinute) },
    app: { redis: connection, logger },
  })
  return { redisServer, lines, redis, server }
}

/** A test server counting rate limits (`perMinute`) in the Redis at `url`; its client closed after the test. */
async function countingIn(t: TestContext, url: string, perMinute: number) {
  const connection = await connectRedis(url, log)
  t.after(() => connection.client.disconnect())
  // connectRedis resolves once connected, or a second later while still trying (a loaded machine).
  await connected(connection.client)
  return startTestServer(t, { env: { RATE_LIMIT_PER_MINUTE: String(perMinute) }, app: { redis: connection } })
}

describe('rate limits shared through Redis', redisSuiteOptions(), () => {
  test('when two instances share Redis, then one key has one limit across both; when Redis goes away, requests are served (fail open); when it is back, the shared limit applies again', async (t) => {
    const redisServer = await startRedis()
    t.after(() => redisServer.stop())
    const { store, reopen } = await sqliteEngine.open(t)
    const clients: Redis[] = []
    const instance = async (instanceStore: typeof store, key?: string) => {
      const connection = await connectRedis(redisServer.url, log)
      const redis = connection.client
      clients.push(redis)
      t.after(() => redis.disconnect())
      // connectRedis resolves once connected, or a second later while still trying (a loaded machine).
      await connected(redis)
      const env = { RATE_LIMIT_PER_MINUTE: '5' }
      const metrics = createMetrics()
      const server = await startTestServer(t, {
        store: instanceStore,
        env,
        app: { redis: connection, metrics },
        ...(key ? { key } : {}),
      })
      return Object.assign(server, {
        uncounted: () => metricValue(metrics, 'petstore_rate_limit_uncounted_total'),
      })
    }
    // Two instances on the same data, so one API key is known to both.
    const a = await instance(store)
    const b = await instance(await reopen(), a.key)
    const key = a.key
    const alternating = async () => {
      const statuses = []
      for (const server of [a, b, a, b, a, b])
        statuses.push((await call(server, 'GET', '/v1/pets', { key })).status)
      return statuses
    }
    const statuses = await alternating()
    assert.deepEqual(statuses.slice(0, 5), [200, 200, 200, 200, 200])
    assert.equal(statuses[5], 429, 'the sixth request in the minute is refused, whichever instance gets it')
    assert.equal((await call(b, 'GET', '/v1/pets', { key })).json.code, 'rate_limited')
    assert.deepEqual([await a.uncounted(), await b.uncounted()], [0, 0], 'every request counted')

    // A key no instance has refused in this window (one that was stays refused: the next test).
    const fresh = generateApiKey()
    await store.createApiKey(storedFormOf('fresh', fresh))
    await redisServer.stop()
    const started = performance.now()
    for (const server of [a, b]) {
      const response = await call(server, 'GET', '/v1/pets', { key: fresh })
      assert.equal(response.status, 200, 'served uncounted while Redis is down')
      assert.equal(response.headers.get('ratelimit-remaining'), null, 'and no count is claimed')
    }
    assert.ok(performance.now() - started < 3000, 'no hang while Redis is down')
    assert.deepEqual(
      [await a.uncounted(), await b.uncounted()],
      [1, 1],
      'each uncounted request in the metrics',
    )

    // Back on the same port, empty: both clients reconnect on their own, within a few seconds, and count
    // together again.
    await redisServer.restart()
    await Promise.all(
      clients.map((redis) =>
        redis.status === 'ready' ? undefined : once(redis, 'ready', { signal: AbortSignal.timeout(5000) }),
      ),
    )
    assert.deepEqual(await alternating(), [200, 200, 200, 200, 200, 429], 'one shared limit again')
  })
})

describe('a key over its limit when Redis goes away', redisSuiteOptions(), () => {
  test('when a key was refused, and Redis restarts empty and counts it under its limit, then a later outage serves it uncounted: the refusal of the window Redis lost is forgotten', async (t) => {
    const redisServer = await startRedis()
    t.after(() => redisServer.stop())
    const server = await countingIn(t, redisServer.url, 3)
    const statuses = []
    for (let i = 0; i < 4; i++) statuses.push((await call(server, 'GET', '/v1/pets')).status)
    assert.deepEqual(statuses, [200, 200, 200, 429])
    await redisServer.stop()
    await redisServer.restart()
    await waitUntil(
      async () => (await call(server, 'GET', '/v1/pets')).headers.get('ratelimit-remaining') === '2',
      'counted anew by the restarted Redis',
      { everyMs: 100 },
    )
    await redisServer.stop()
    const served = await call(server, 'GET', '/v1/pets')
    assert.equal(served.status, 200, 'under its limit in the last window Redis counted')
    assert.equal(served.headers.get('ratelimit-remaining'), null, 'served uncounted')
  })

  test('when a key was refused in its window and Redis then goes away, then it stays refused until that window ends, while other keys are served uncounted', async (t) => {
    const redisServer = await startRedis()
    t.after(() => redisServer.stop())
    const server = await countingIn(t, redisServer.url, 3)
    const other = generateApiKey()
    await server.store.createApiKey(storedFormOf('other', other))
    const statuses = []
    for (let i = 0; i < 4; i++) statuses.push((await call(server, 'GET', '/v1/pets')).status)
    assert.deepEqual(statuses, [200, 200, 200, 429])

    await redisServer.stop()
    const refused = await call(server, 'GET', '/v1/pets')
    assert.equal(refused.status, 429, 'the outage does not lift its limit')
    assert.equal(refused.json.code, 'rate_limited')
    const retryAfter = Number(refused.headers.get('retry-after'))
    assert.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After: ${retryAfter}`)
    const served = await call(server, 'GET', '/v1/pets', { key: other })
    assert.equal(served.status, 200, 'a key under its limit is served, uncounted')
    assert.equal(served.headers.get('ratelimit-remaining'), null)
  })
})

describe('Redis outages in the log', redisSuiteOptions(), () => {
  test('when Redis goes away and comes back, then one line says it is unreachable (with the stack), one that it is reachable again, and nothing per reconnect attempt', async (t) => {
    const { redisServer, lines, redis } = await redisLoggingTo(t)
    let failedAttempts = 0
    redis.on('error', () => failedAttempts++)
    const outage = async () => {
      const before = failedAttempts
      await redisServer.stop()
      // Retries come 0.2, 0.4, 0.6 s… apart: four failed attempts are about two seconds of outage.
      await waitUntil(
        () => failedAttempts >= before + 4,
        () => `failed attempts: ${failedAttempts}`,
      )
    }
    const recovery = async () => {
      await redisServer.restart()
      await within(once(redis, 'ready'), 5000, 'reconnected to Redis')
    }

    await outage()
    assert.equal(lines.length, 1, `one line for the outage:\n${JSON.stringify(lines, null, 1)}`)
    const down = lines[0] as Record<string, unknown>
    assert.equal(down.level, 40)
    assert.equal(down.msg, 'Redis is unreachable: rate limits are not counted until it is back')
    assert.equal(typeof (down.err as { stack?: unknown } | undefined)?.stack, 'string', 'the stack, once')

    await recovery()
    assert.equal(lines.length, 2, JSON.stringify(lines, null, 1))
    const up = lines[1] as Record<string, unknown>
    assert.equal(up.level, 30)
    assert.equal(up.msg, 'Redis is reachable again: rate limits are counted')
    assert.equal(up.err, undefined)
    assert.ok(Number(up.downMs) >= 1000, `how long it was unreachable: ${up.downMs}`)

    // A second outage is a new one, reported again.
    await outage()
    await recovery()
    assert.deepEqual(
      lines.map((line) => line.level),
      [40, 30, 40, 30],
    )
  })
})

describe('a Redis connection dropped under load', redisSuiteOptions(), () => {
  test('when Redis drops the connection while counts are under way (a restart, CLIENT KILL), then they fail at once, served uncounted, and no line says Redis does not answer', async (t) => {
    const { redisServer, lines, redis, server } = await serverLoggingTo(t, 1000000)
    const killer = new Redis(redisServer.url)
    t.after(() => killer.disconnect())
    let loading = true
    const statuses: number[] = []
    const load = Array.from({ length: 8 }, async () => {
      while (loading) statuses.push((await call(server, 'GET', '/v1/pets')).status)
    })
    for (let kill = 0; kill < 3; kill++) {
      await sleep(300)
      await killer.call('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes')
      await connected(redis)
    }
    await sleep(1500)
    loading = false
    await Promise.all(load)
    assert.deepEqual([...new Set(statuses)], [200])
    const silent = lines.filter((line) => /does not answer/.test(String(line.msg)))
    assert.deepEqual(silent, [], 'a dropped connection is no silent Redis')
  })
})

describe('a Redis that hangs', redisSuiteOptions(), () => {
  test('when Redis stops answering, then after two requests time out one a second waits for it and the others are served at once, uncounted; one line says so, one when it answers again', async (t) => {
    const { redisServer, lines, redis, server } = await serverLoggingTo(t, 100)
    const redisLines = () => lines.filter((line) => /Redis/.test(String(line.msg)))
    assert.equal((await call(server, 'GET', '/v1/pets')).headers.get('ratelimit-remaining'), '99')

    // Each time the counter asks Redis: its script, by digest (EVALSHA) or whole (EVAL).
    const askedAt: number[] = []
    const sendCommand = redis.sendCommand.bind(redis)
    redis.sendCommand = ((command, stream) => {
      if (command.name === 'evalsha' || command.name === 'eval') askedAt.push(performance.now())
      return sendCommand(command, stream)
    }) as typeof redis.sendCommand

    redisServer.freeze()
    t.after(() => redisServer.thaw())
    const started = performance.now()
    const took: number[] = []
    for (let i = 0; i < 12; i++) {
      const started = performance.now()
      const response = await call(server, 'GET', '/v1/pets')
      took.push(Math.round(performance.now() - started))
      assert.equal(response.status, 200, 'served while Redis hangs')
      assert.equal(response.headers.get('ratelimit-remaining'), null, 'and no count is claimed')
    }
    // Requests go on coming, a tenth of a second apart, for long enough that Redis is asked again, and
    // that the connection made anew meanwhile times out its own ready check (a review's 9 s hang: 'Redis is
    // unreachable' was said too, and a second line when it answered).
    while (performance.now() - started < 6000) {
      await sleep(100)
      assert.equal((await call(server, 'GET', '/v1/pets')).status, 200, 'served while Redis hangs')
    }
    // The first two wait out the command timeout (500 ms); the others pass Redis by, but one a second
    // asks it. Counted in commands, not in request times, which a loaded host stretches.
    const gaps = askedAt.slice(2).map((at, i) => Math.round(at - (askedAt[i + 1] as number)))
    assert.ok(gaps.length >= 1, `Redis was asked again within 6 s: ${askedAt.length} asked; took ${took}`)
    assert.ok(
      gaps.every((gap) => gap >= 900),
      `asked again at most once a second, after the two that timed out: gaps ${gaps} ms`,
    )
    assert.deepEqual(
      redisLines().map((line) => [line.level, line.msg]),
      [[40, 'Redis does not answer: rate limits are not counted until it does']],
    )

    redisServer.thaw()
    await waitUntil(
      async () => (await call(server, 'GET', '/v1/pets')).headers.get('ratelimit-remaining') !== null,
      'counting did not resume once Redis answered',
    )
    assert.deepEqual(
      redisLines().map((line) => [line.level, line.msg]),
      [
        [40, 'Redis does not answer: rate limits are not counted until it does'],
        [30, 'Redis answers again: rate limits are counted'],
      ],
    )
  })
})

describe('a Redis connection that goes silent', redisSuiteOptions(), () => {
  test('when the connection to Redis goes silent while Redis answers new ones (a peer gone without a reset), then the service connects again and counts within seconds, not when the kernel gives the connection up', async (t) => {
    const redisServer = await startRedis()
    t.after(() => redisServer.stop())
    const proxy = await startTcpProxy(t, redisServer.url)
    const server = await countingIn(t, proxy.url, 100)
    assert.equal((await call(server, 'GET', '/v1/pets')).headers.get('ratelimit-remaining'), '99')
    proxy.mute()
    await waitUntil(
      async () => (await call(server, 'GET', '/v1/pets')).headers.get('ratelimit-remaining') !== null,
      'counting did not resume on a new connection',
      { timeoutMs: 10_000, everyMs: 100 },
    )
  })
})

describe('counts asked of a Redis that hung', redisSuiteOptions(), () => {
  test('when Redis hangs while requests are served uncounted and then answers again, then no request is counted more than once', async (t) => {
    const redisServer = await startRedis()
    t.after(() => redisServer.stop())
    const server = await countingIn(t, redisServer.url, 100)
    assert.equal((await call(server, 'GET', '/v1/pets')).headers.get('ratelimit-remaining'), '99')
    redisServer.freeze()
    t.after(() => redisServer.thaw())
    // Ten at once: each waits out the command timeout, or passes Redis by, and is served uncounted.
    const served = await Promise.all(Array.from({ length: 10 }, () => call(server, 'GET', '/v1/pets')))
    assert.ok(served.every((answer) => answer.status === 200))
    // Long enough for a new connection to be made meanwhile.
    await sleep(2000)
    redisServer.thaw()
    let remaining = Number.NaN
    await waitUntil(async () => {
      remaining = Number(
        (await call(server, 'GET', '/v1/pets')).headers.get('ratelimit-remaining') ?? Number.NaN,
      )
      return !Number.isNaN(remaining)
    }, 'counting did not resume once Redis answered')
    // Redis may run the 10 it received while hung, but none twice: 99, less those 10, the request that
    // read the count, and one re-ask the thaw may answer after it timed out (88 in every run seen).
    assert.ok(remaining >= 99 - 10 - 1 - 1, `remaining ${remaining}`)
  })
})

// The security review's fake: 50 replies to each read of commands, where Redis sends one per command.
const REPLIES_OUT_OF_STEP = '*2\r\n:1\r\n$3\r\nabc\r\n'.repeat(50)

/**
 * A Redis address whose connections, while `outOfStep` holds, get REPLIES_OUT_OF_STEP for whatever they
 * send; connections made once it no longer holds are passed through to the Redis at `targetUrl`.
 */
async function outOfStepRedis(t: TestContext, targetUrl: string) {
  const target = new URL(targetUrl)
  const state = { outOfStep: true, url: '' }
  const { port } = await trackedServer(t, (client, track) => {
    if (state.outOfStep) {
      client.on('data', () => client.write(REPLIES_OUT_OF_STEP))
      return
    }
    const upstream = createConnection({ host: target.hostname, port: Number(target.port) })
    track(upstream)
    client.pipe(upstream).pipe(client)
    client.on('close', () => upstream.destroy())
    upstream.on('close', () => client.destroy())
  })
  state.url = `redis://127.0.0.1:${port}`
  return state
}

// The counting script as the client sends it, by digest or whole: a RESP array's first bulk string.
const COUNT_COMMAND = /\$7\r\nevalsha\r\n|\$4\r\neval\r\n/gi
// A reply shaped as the script's count: the one too many looks like an answer, not like noise.
const ONE_REPLY_TOO_MANY = '*2\r\n:1\r\n:60000\r\n'

/**
 * A Redis address passed through to the Redis at `targetUrl`, adding ONE_REPLY_TOO_MANY after Redis's
 * reply to each count while `extraReply` holds: it answers INFO (the ready check) as Redis does.
 */
async function extraReplyAfterCounts(t: TestContext, targetUrl: string) {
  const target = new URL(targetUrl)
  const state = { extraReply: true, url: '' }
  const { port } = await trackedServer(t, (client, track) => {
    const upstream = createConnection({ host: target.hostname, port: Number(target.port) })
    track(upstream)
    // Counts asked and not answered yet: one at a time under a trickle, so Redis's next data is the reply.
    let counts = 0
    client.on('data', (data: Buffer) => {
      counts += data.toString('latin1').match(COUNT_COMMAND)?.length ?? 0
      upstream.write(data)
    })
    upstream.on('data', (data: Buffer) => {
      client.write(data)
      if (counts > 0 && state.extraReply) client.write(ONE_REPLY_TOO_MANY.repeat(counts))
      counts = 0
    })
    client.on('close', () => upstream.destroy())
    upstream.on('close', () => client.destroy())
  })
  state.url = `redis://127.0.0.1:${port}`
  return state
}

const outOfStep = 'Redis sends replies no command asked for: rate limits are not counted until it stops'
const inStep = 'Redis replies in step again: rate limits are counted'

/** The service's lines about Redis, and any fatal one, as [level, message]. */
function redisLinesOf(server: ServeProcess) {
  return logLines(server)
    .filter((line) => /Redis/.test(String(line.msg)) || line.level === 60)
    .map((line) => [line.level, line.msg])
}

/** Requests until the service says Redis's replies are in step again: a count (one a second) proves it. */
async function untilInStep(server: ServeProcess, request: ReturnType<typeof requesterFor>) {
  await waitUntil(
    async () => {
      assert.equal((await request(server, '/v1/pets')).status, 200, server.output())
      return logLines(server).some((line) => line.msg === inStep)
    },
    () => `not logged:\n${server.output()}`,
    { everyMs: 100 },
  )
}

describe('a Redis that sends replies no command asked for', redisSuiteOptions(), () => {
  test('when Redis answers each command with 50 replies, then the service serves on uncounted and ready, one warn line says so (nothing fatal), and one info line when its replies are in step again', async (t) => {
    const redisServer = await startRedis()
    t.after(() => redisServer.stop())
    const fake = await outOfStepRedis(t, redisServer.url)
    const key = generateApiKey()
    const env = { REDIS_URL: fake.url, RATE_LIMIT_PER_MINUTE: '100', API_KEYS: `ops:${key}` }
    const server = await startServeProcess(env, temporaryDirectory(t))
    t.after(() => server.child.kill('SIGKILL'))
    const request = requesterFor(key)

    // Long enough for the client to meet the fake on several connections (each is dropped and remade).
    const until = performance.now() + 2000
    for (let i = 0; performance.now() < until; i++) {
      const created = await request(server, '/v1/pets', {
        method: 'POST',
        body: `{"name":"pet ${i}","categoryId":1}`,
      })
      assert.equal(created.status, 201, `${await created.text()}\n${server.output()}`)
      const listed = await request(server, '/v1/pets')
      assert.equal(listed.status, 200, server.output())
      assert.equal(listed.headers.get('ratelimit-remaining'), null, 'no count is claimed')
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    assert.equal(server.child.exitCode, null, server.output())
    assert.equal((await checkedFetch(server.origin, '/readyz')).status, 200, 'ready, as in a Redis outage')
    assert.deepEqual(redisLinesOf(server), [[40, outOfStep]], `said once, at warn:\n${server.output()}`)

    fake.outOfStep = false
    // In step again once a count asked of Redis (one request a second asks) has met no reply too many.
    await untilInStep(server, request)
    const counted = await request(server, '/v1/pets')
    assert.equal(counted.status, 200)
    assert.match(String(counted.headers.get('ratelimit-remaining')), /^\d+$/, 'counted again')
    assert.deepEqual(redisLinesOf(server), [
      [40, outOfStep],
      [30, inStep],
    ])
    await stop(server)
  })

  test('when Redis (or a proxy) answers each count with one reply too many and every other command in step, then for as long as it does the service serves every request uncounted, one warn line says so and none says it is in step again; once it stops, one info line, and counts resume', async (t) => {
    const redisServer = await startRedis()
    t.after(() => redisServer.stop())
    const proxy = await extraReplyAfterCounts(t, redisServer.url)
    const key = generateApiKey()
    const env = { REDIS_URL: proxy.url, RATE_LIMIT_PER_MINUTE: '1000', API_KEYS: `ops:${key}` }
    const server = await startServeProcess(env, temporaryDirectory(t))
    t.after(() => server.child.kill('SIGKILL'))
    const request = requesterFor(key)

    // Its ready check (INFO) is answered in step: only a count shows the reply too many.
    const until = performance.now() + 5000
    let requests = 0
    while (performance.now() < until) {
      const response = await request(server, '/v1/pets')
      assert.equal(response.status, 200, server.output())
      requests++
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    assert.ok(requests >= 20, `a steady trickle: ${requests} requests`)
    assert.equal(server.child.exitCode, null, server.output())
    assert.deepEqual(redisLinesOf(server), [[40, outOfStep]], `said once, never in step:\n${server.output()}`)

    proxy.extraReply = false
    await untilInStep(server, request)
    await waitUntil(
      async () =>
        /^\d+$/.test(String((await request(server, '/v1/pets')).headers.get('ratelimit-remaining'))),
      () => `not counted again:\n${server.output()}`,
      { everyMs: 100 },
    )
    assert.deepEqual(redisLinesOf(server), [
      [40, outOfStep],
      [30, inStep],
    ])
    const inStepLine = logLines(server).find((line) => line.msg === inStep)
    assert.ok(Number(inStepLine?.outOfStepMs) >= 5000, `out of step for ${inStepLine?.outOfStepMs} ms`)
    await stop(server)
  })
})

describe('rate limits when Redis refuses to count', redisSuiteOptions(), () => {
  test('when Redis refuses the count (out of memory, a read-only replica), then requests are served uncounted, one line says why, and one when it counts again', async (t) => {
    const { lines, logger, redis, connection } = await redisLoggingTo(t)
    const server = await startTestServer(t, {
      env: { RATE_LIMIT_PER_MINUTE: '100' },
      app: { redis: connection, logger },
    })
    const redisLines = () =>
      lines.filter((line) => /Redis/.test(String(line.msg))).map((line) => [line.level, line.msg])
    const remaining = async () => {
      const response = await call(server, 'GET', '/v1/pets')
      assert.equal(response.status, 200, 'served whatever Redis says')
      return response.headers.get('ratelimit-remaining')
    }
    assert.equal(await remaining(), '99')
    const refusals: Array<[string, () => Promise<unknown>, () => Promise<unknown>]> = [
      ['OOM', () => redis.config('SET', 'maxmemory', '1'), () => redis.config('SET', 'maxmemory', '0')],
      // A failover that left the service on a replica: a master that is not there, so it stays one.
      [
        'READONLY',
        () => redis.call('REPLICAOF', '127.0.0.1', '1'),
        () => redis.call('REPLICAOF', 'NO', 'ONE'),
      ],
    ]
    for (const [reply, refuse, mend] of refusals) {
      await refuse()
      for (let i = 0; i < 5; i++) assert.equal(await remaining(), null, `${reply}: no count claimed`)
      await mend()
      assert.match(String(await remaining()), /^\d+$/, `${reply}: counted again`)
      const refused = lines.filter(
        (line) => line.msg === 'Redis refuses to count: rate limits are not counted until it does',
      )
      assert.match(String((refused.at(-1)?.err as { message?: string })?.message), new RegExp(`^${reply}`))
    }
    assert.deepEqual(redisLines(), [
      [40, 'Redis refuses to count: rate limits are not counted until it does'],
      [30, 'Redis counts again: rate limits are counted'],
      [40, 'Redis refuses to count: rate limits are not counted until it does'],
      [30, 'Redis counts again: rate limits are counted'],
    ])
  })
})

describe('Redis credentials at start', redisSuiteOptions(), () => {
  test('when Redis refuses the credentials REDIS_URL gives (none, or a wrong password), then the start stops with one line saying so; with the right one it serves', async (t) => {
    const redis = await startRedis({ password: 'sekret' })
    t.after(() => redis.stop())
    const cwd = temporaryDirectory(t)
    const withPassword = (password: string) => redis.url.replace('redis://', `redis://:${password}@`)
    for (const [url, workers] of [
      [redis.url, '1'],
      [withPassword('wrong'), '1'],
      [redis.url, '2'],
    ] as const) {
      const env = { REDIS_URL: url, PORT: '0', WORKERS: workers }
      const result = await runCliAsync(['serve'], env, cwd, { timeoutMs: 20_000 })
      assert.equal(result.status, 1, result.stderr)
      assert.equal(result.stderr.trim().split('\n').length, 1, result.stderr)
      assert.match(result.stderr, /REDIS_URL: Redis refused its credentials \((NOAUTH|WRONGPASS)\)/)
      assert.doesNotMatch(result.stderr, /wrong|sekret/, 'the password is not echoed')
      assert.equal(existsSync(join(cwd, 'data')), false, `WORKERS=${workers}: no database made first`)
    }
    const server = await startServeProcess({ REDIS_URL: withPassword('sekret') }, cwd)
    t.after(() => server.child.kill('SIGKILL'))
    assert.equal(server.child.exitCode, null)
  })

  test('when REDIS_URL names a database Redis does not have, then the start stops with one line naming it', async (t) => {
    const redis = await startRedis()
    t.after(() => redis.stop())
    const cwd = temporaryDirectory(t)
    const env = { REDIS_URL: `${redis.url}/99`, PORT: '0' }
    const result = await runCliAsync(['serve'], env, cwd, { timeoutMs: 20_000 })
    assert.equal(result.status, 1, result.stderr)
    assert.equal(result.stderr.trim().split('\n').length, 1, result.stderr)
    assert.match(
      result.stderr,
      /^petstore serve: REDIS_URL: Redis has no database 99 \(ERR DB index is out of range\)/,
    )
  })

  test('when REDIS_URL names a server that is not Redis (an HTTP port), then the start stops with one line saying so', async (t) => {
    const { port } = await trackedServer(t, (client) => {
      client.on('data', () => client.end('HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n'))
    })
    const cwd = temporaryDirectory(t)
    const env = { REDIS_URL: `redis://127.0.0.1:${port}`, PORT: '0' }
    const result = await runCliAsync(['serve'], env, cwd, { timeoutMs: 20_000 })
    assert.equal(result.status, 1, result.stderr)
    assert.equal(result.stderr.trim().split('\n').length, 1, result.stderr)
    assert.match(
      result.stderr,
      /^petstore serve: REDIS_URL: the server it names does not answer as Redis does/,
    )
  })

  test('when Redis is down at start and, once up, refuses the credentials, then the service serves uncounted and one error line says to correct them', async (t) => {
    const redis = await startRedis({ password: 'sekret' })
    t.after(() => redis.stop())
    await redis.stop()
    // A wrong password: Redis's reply to AUTH carries the command, the password in it, to the logger.
    const url = redis.url.replace('redis://', 'redis://:not-the-password@')
    const server = await startServeProcess({ REDIS_URL: url }, temporaryDirectory(t))
    t.after(() => server.child.kill('SIGKILL'))
    await redis.restart()
    const refusedLines = (lines: LogLine[]) => {
      const found = lines.filter((line) => /refuses the credentials/.test(String(line.msg)))
      return found.length > 0 ? found : undefined
    }
    await waitForLog(server, refusedLines)
    // Reconnect attempts come every 0.2–2 s: a few more have met the same refusal by then.
    await new Promise((resolve) => setTimeout(resolve, 2000))
    const refused = refusedLines(logLines(server)) ?? []
    assert.equal(refused.length, 1, 'said once, not per reconnect attempt')
    assert.equal(refused[0]?.level, 50)
    assert.equal(server.child.exitCode, null)
    assert.equal(server.output().includes('not-the-password'), false, 'the password is never logged')
  })

  test('when Redis is down at start and, once up, has no database REDIS_URL names, then nothing is counted in another database and the service never says it counts', async (t) => {
    const redis = await startRedis()
    t.after(() => redis.stop())
    await redis.stop()
    const env = {
      REDIS_URL: `${redis.url}/99`,
      RATE_LIMIT_PER_MINUTE: '1',
      API_KEYS: `ops:${generateApiKey()}`,
    }
    const server = await startServeProcess(env, temporaryDirectory(t))
    t.after(() => server.child.kill('SIGKILL'))
    await redis.restart()
    await waitForLog(server, (lines) =>
      lines.some((line) => /Redis has no database 99/.test(String(line.msg))) ? true : undefined,
    )
    const key = env.API_KEYS.slice('ops:'.length)
    for (let i = 0; i < 3; i++) {
      const response = await checkedFetch(server.origin, '/v1/pets', {
        headers: { authorization: `Bearer ${key}` },
      })
      assert.equal(response.status, 200, 'uncounted, as in an outage')
    }
    assert.equal(await redis.keyCount(), 0, 'no count went to database 0')
    assert.equal(
      logLines(server).some((line) => /rate limits are counted/.test(String(line.msg))),
      false,
    )
  })

  test('when Redis changes its password under a running service, then one error line says so, and neither password reaches the log', async (t) => {
    const redis = await startRedis({ password: 'first-password' })
    t.after(() => redis.stop())
    const url = redis.url.replace('redis://', 'redis://:first-password@')
    const server = await startServeProcess({ REDIS_URL: url }, temporaryDirectory(t))
    t.after(() => server.child.kill('SIGKILL'))
    const { Redis } = await import('ioredis')
    const admin = new Redis(url)
    t.after(() => admin.disconnect())
    await admin.config('SET', 'requirepass', 'second-password')
    // The service's connection is cut: it reconnects with the password it has, which Redis now refuses.
    await admin.call('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes')
    await waitForLog(server, (lines) =>
      lines.some((line) => /refuses the credentials/.test(String(line.msg))) ? true : undefined,
    )
    await new Promise((resolve) => setTimeout(resolve, 1000))
    for (const password of ['first-password', 'second-password'])
      assert.equal(server.output().includes(password), false, `${password} is in the log`)
  })
})
