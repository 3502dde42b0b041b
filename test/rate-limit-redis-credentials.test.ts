import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { generateApiKey } from '../src/auth/api-key.ts'
import { temporaryDirectory } from './helpers/cleanup.ts'
import { type LogLine, logLines, runCli, startServeProcess, waitForLog } from './helpers/cli-process.ts'
import { checkedFetch } from './helpers/conformance-fetch.ts'
import { redisSuiteOptions, startRedis } from './helpers/redis-server.ts'
import { trackedServer } from './helpers/tcp-proxy.ts'

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
      const result = await runCli(['serve'], env, cwd, { timeoutMs: 20_000 })
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
    const result = await runCli(['serve'], env, cwd, { timeoutMs: 20_000 })
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
    const result = await runCli(['serve'], env, cwd, { timeoutMs: 20_000 })
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
