import assert from 'node:assert/strict'
import { createConnection } from 'node:net'
import { describe, type TestContext, test } from 'node:test'
import { generateApiKey } from '../src/auth/api-key.ts'
import { waitUntil } from './helpers/bounded-wait.ts'
import { temporaryDirectory } from './helpers/cleanup.ts'
import { logLines, requesterFor, type ServeProcess, startServeProcess, stop } from './helpers/cli-process.ts'
import { checkedFetch } from './helpers/conformance-fetch.ts'
import { redisSuiteOptions, startRedis } from './helpers/redis-server.ts'
import { trackedServer } from './helpers/tcp-proxy.ts'

// A fake that is out of step: 50 replies to each read of commands, where Redis sends one per command.
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
      // The first count's own reply may come before the one too many, which then shows the others out of step.
      if (requests > 0) assert.equal(response.headers.get('ratelimit-remaining'), null, 'served uncounted')
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
