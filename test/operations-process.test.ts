import assert from 'node:assert/strict'
import { once } from 'node:events'
import { connect } from 'node:net'
import { describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { generateApiKey } from '../src/auth/api-key.ts'
import { temporaryDirectory } from './helpers/cleanup.ts'
import {
  exitWithin,
  logLines,
  requesterFor,
  type ServeProcess,
  startServeProcess,
  waitForLog,
} from './helpers/cli-process.ts'
import { checkedFetch } from './helpers/conformance-fetch.ts'
import { exchange } from './helpers/raw-http.ts'

const key = generateApiKey()
const env = { API_KEYS: `ops:${key}` }
const request = requesterFor(key)

/** Waits until the process logs a line with this message. */
function logged(server: ServeProcess, message: string): Promise<true> {
  return waitForLog(server, (lines) => (lines.some((line) => line.msg === message) ? true : undefined))
}

/** Prometheus text exposition: `name{labels} value` samples, comments skipped. */
function parseExposition(text: string): Array<{ name: string; labels: string; value: number }> {
  return text
    .split('\n')
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => {
      const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$/.exec(line)
      assert.ok(match, `not exposition format: ${line}`)
      return { name: match[1] as string, labels: match[2] ?? '', value: Number(match[3]) }
    })
}

describe('logs', () => {
  test('when requests are served, then each gives one JSON line with request id, operation, status, duration and key name', async (t) => {
    const server = await startServeProcess(env, temporaryDirectory(t))
    t.after(() => server.child.kill('SIGKILL'))
    const given = await request(server, '/v1/pets', { headers: { 'x-request-id': 'client-chosen.42' } })
    assert.equal(given.headers.get('x-request-id'), 'client-chosen.42')
    const odd = await request(server, '/v1/pets', { headers: { 'x-request-id': 'no spaces allowed' } })
    const generated = odd.headers.get('x-request-id') ?? ''
    assert.match(generated, /^[0-9a-f-]{36}$/)
    await request(server, '/v1/pets/1', { headers: { authorization: 'Bearer nope' } })
    // The last request's line is written after its response; wait for it rather than for a fixed time.
    await waitForLog(server, (all) =>
      all.find((line) => line.msg === 'request' && line.operation === 'getPet'),
    )
    const lines = logLines(server).filter((line) => line.msg === 'request')
    const first = lines.find((line) => line.reqId === 'client-chosen.42')
    assert.ok(first, 'the client request id is the log line id')
    assert.equal(first.operation, 'listPets')
    assert.equal(first.status, 200)
    assert.equal(first.key, 'ops')
    assert.equal(typeof first.durationMs, 'number')
    assert.ok(lines.some((line) => line.reqId === generated))
    const refused = lines.find((line) => line.operation === 'getPet')
    assert.equal(refused?.status, 401)
    assert.equal(lines.filter((line) => line.reqId === 'client-chosen.42').length, 1, 'one line per request')
    assert.equal(server.output().includes(key), false)
    assert.equal(server.output().includes('Bearer nope'), false)
  })

  test('when LOG_FORMAT=pretty, then lines are written for people, not as JSON', async (t) => {
    const server = await startServeProcess({ ...env, LOG_FORMAT: 'pretty' }, temporaryDirectory(t))
    t.after(() => server.child.kill('SIGKILL'))
    assert.match(server.output(), /INFO.*serving http/)
    assert.equal(logLines(server).length, 0)
  })
})

describe('metrics', () => {
  test('when scraped on their own port, then Prometheus metrics count requests, creates (not their replays), 401s and deprecated calls', async (t) => {
    const server = await startServeProcess(env, temporaryDirectory(t))
    t.after(() => server.child.kill('SIGKILL'))
    const port = /metrics on port (\d+)/.exec(server.output())?.[1]
    assert.ok(port, 'the metrics listener is announced')
    const create = () =>
      request(server, '/v1/pets', {
        method: 'POST',
        body: '{"name":"M","categoryId":1}',
        headers: { 'idempotency-key': 'metrics-1' },
      })
    const created = (await (await create()).json()) as { id: number }
    // The same create again: its first answer replayed, no pet created.
    const replay = await create()
    assert.equal(replay.headers.get('idempotent-replayed'), 'true')
    assert.equal(((await replay.json()) as { id: number }).id, created.id)
    await request(server, `/v1/pets/${created.id}`)
    await request(server, '/v1/pets', { headers: { authorization: 'Bearer wrong' } })
    assert.equal((await checkedFetch(server.origin, '/metrics')).status, 404, 'not served on the API port')

    const scrape = await fetch(`http://127.0.0.1:${port}/metrics`)
    assert.match(scrape.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/)
    const samples = parseExposition(await scrape.text())
    const value = (name: string, labels = '') =>
      samples.filter((s) => s.name === name && s.labels.includes(labels)).reduce((sum, s) => sum + s.value, 0)
    assert.equal(
      value('petstore_http_request_duration_seconds_count', 'operation="createPet",status="201"'),
      2,
    )
    assert.equal(value('petstore_http_request_duration_seconds_count', 'operation="getPet",status="200"'), 1)
    assert.equal(value('petstore_pets_created_total'), 1)
    assert.equal(value('petstore_unauthorized_total'), 1)
    assert.equal(value('petstore_rate_limit_uncounted_total'), 0, 'served, and nothing uncounted in memory')
    assert.equal(value('petstore_deprecated_calls_total', 'key="ops"'), 1)
    assert.ok(value('petstore_store_duration_seconds_count', 'operation="createPet",outcome="ok"') >= 1)
    assert.ok(samples.some((s) => s.name === 'nodejs_eventloop_lag_p99_seconds'))
    assert.ok(samples.some((s) => s.name === 'process_resident_memory_bytes'))
  })
})

describe('graceful lifecycle', () => {
  for (const writeThread of ['off', 'on']) {
    test(`when SIGTERM arrives under write load (SQLITE_WRITE_THREAD=${writeThread}), then the process drains, exits 0, and every acknowledged create is stored`, async (t) => {
      const cwd = temporaryDirectory(t)
      const server = await startServeProcess({ ...env, SQLITE_WRITE_THREAD: writeThread }, cwd)
      t.after(() => server.child.kill('SIGKILL'))
      const acknowledged: string[] = []
      let writing = true
      let signalled = false
      let refused = 0
      const writers = Array.from({ length: 8 }, async (_, w) => {
        for (let i = 0; writing; i++) {
          let response: Response
          let text: string
          try {
            response = await request(server, '/v1/pets', {
              method: 'POST',
              body: `{"name":"w${w}-${i}","categoryId":1}`,
              signal: AbortSignal.timeout(10_000),
            })
            text = await response.text()
          } catch (error) {
            // fetch fails with a TypeError when the connection is refused or dropped: expected once the
            // listener is closed, a failure before. Anything else (an assertion) is not swallowed.
            if (!(error instanceof TypeError) || !signalled) throw error
            refused++
            return
          }
          if (response.status === 201) {
            acknowledged.push(text)
            continue
          }
          assert.ok(signalled, `${response.status} before SIGTERM: ${text}`)
          assert.equal(response.status, 503, text)
          assert.equal(response.headers.get('connection'), 'close', 'a draining server closes the connection')
          refused++
        }
      })
      // Stopped even when an assertion fails first, or the writers would run on; each call ends within its
      // 10 s timeout. Their own failures are reported where the test awaits them below.
      t.after(async () => {
        writing = false
        await Promise.allSettled(writers)
      })
      // Signal once writes are flowing, not after a fixed time: with the write thread on, the first create
      // also starts the thread, which can take longer than any fixed pause on a busy machine.
      const deadline = Date.now() + 10_000
      while (acknowledged.length < 20 && Date.now() < deadline) await sleep(20)
      signalled = true
      server.child.kill('SIGTERM')
      assert.equal(await exitWithin(server), 0)
      writing = false
      await Promise.all(writers)
      assert.ok(refused > 0, 'requests after the signal were refused (503 or connection refused)')
      assert.ok(acknowledged.length >= 20, `${acknowledged.length} creates acknowledged before the signal`)

      const again = await startServeProcess(env, cwd)
      t.after(() => again.child.kill('SIGKILL'))
      for (const text of acknowledged) {
        const { id } = JSON.parse(text)
        assert.equal(await (await request(again, `/v1/pets/${id}`)).text(), text)
      }
    })
  }

  test('when SIGTERM arrives, then /readyz on a kept-alive connection answers 503 and the connection is closed', async (t) => {
    const server = await startServeProcess(env, temporaryDirectory(t))
    t.after(() => server.child.kill('SIGKILL'))
    const socket = connect({ host: '127.0.0.1', port: Number(new URL(server.origin).port) })
    t.after(() => socket.destroy())
    await once(socket, 'connect')
    const probe = 'GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n'
    assert.match(await exchange(socket, probe), /^HTTP\/1\.1 200 /)
    // The next probe has begun on the same connection (as a load balancer's probe on its pooled connection
    // may have), so the connection is busy, not idle: draining answers it instead of closing it under it.
    socket.write(probe.slice(0, 10))
    server.child.kill('SIGTERM')
    await logged(server, 'shutting down')
    const answer = await exchange(socket, probe.slice(10))
    assert.match(answer, /^HTTP\/1\.1 503 /)
    assert.match(answer, /\r\nconnection: close\r\n/i)
    assert.match(answer, /"code":"service_unavailable"/)
    assert.equal(await exitWithin(server), 0)
  })
})
