import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { once } from 'node:events'
import { connect } from 'node:net'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { generateApiKey } from '../src/auth/api-key.ts'
import { waitFor } from './helpers/bounded-wait.ts'
import { temporaryDirectory } from './helpers/cleanup.ts'
import { logLines, startServeProcess, stop, waitForLog } from './helpers/cli-process.ts'
import { openSocket } from './helpers/raw-http.ts'

const key = generateApiKey()
// The client a trusted proxy names, for the connection that resets.
const FORWARDED_CLIENT = '203.0.113.50'

/** The count of the request histogram's series for `operation` and `status`, scraped from the listener. */
async function durationCount(metricsOrigin: string, operation: string, status: number): Promise<number> {
  const text = await (await fetch(`${metricsOrigin}/metrics`)).text()
  const series = `petstore_http_request_duration_seconds_count{operation="${operation}",status="${status}"}`
  const line = text.split('\n').find((sample) => sample.startsWith(`${series} `))
  return line === undefined ? 0 : Number(line.slice(series.length + 1))
}

/**
 * Sends a create with `requestId` and gives up on it after 500 ms: closing its connection, or resetting it
 * (then as a proxy would, naming its client in X-Forwarded-For).
 */
async function giveUp(origin: string, requestId: string, how: 'closes' | 'resets'): Promise<void> {
  const body = JSON.stringify({ name: 'Patient', categoryId: 1 })
  if (how === 'closes') {
    const given = fetch(`${origin}/v1/pets`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        'x-request-id': requestId,
      },
      body,
      signal: AbortSignal.timeout(500),
    })
    await assert.rejects(given, { name: 'TimeoutError' })
    return
  }
  const socket = connect(Number(new URL(origin).port), '127.0.0.1')
  socket.on('error', () => {})
  await once(socket, 'connect')
  socket.write(
    `POST /v1/pets HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\nX-Request-Id: ${requestId}\r\n` +
      `X-Forwarded-For: ${FORWARDED_CLIENT}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
  )
  await sleep(500)
  socket.resetAndDestroy()
}

for (const how of ['closes', 'resets'] as const) {
  test(`when a client gives up before its answer (a create waiting on a locked database) and ${how} its connection, then the request still has its line, status 499 with its duration and its client's address (the one a trusted proxy names), and is counted; the answer made later adds nothing`, async (t) => {
    const cwd = temporaryDirectory(t)
    const server = await startServeProcess(
      {
        API_KEYS: `ops:${key}`,
        SQLITE_BUSY_TIMEOUT_MS: '60000',
        ...(how === 'resets' ? { TRUSTED_PROXIES: 'loopback' } : {}),
      },
      cwd,
    )
    t.after(() => server.child.kill('SIGKILL'))
    const port = /metrics on port (\d+)/.exec(server.output())?.[1]
    assert.ok(port, server.output())
    const metricsOrigin = `http://127.0.0.1:${port}`

    const holder = new DatabaseSync(join(cwd, 'data', 'petstore.db'))
    t.after(() => holder.close())
    holder.exec('BEGIN IMMEDIATE')
    const requestId = randomUUID()
    await giveUp(server.origin, requestId, how)
    const line = await waitForLog(server, (lines) =>
      lines.find((logged) => logged.reqId === requestId && logged.msg === 'request'),
    )
    assert.equal(line.status, 499)
    assert.equal(line.operation, 'createPet')
    // Read when the request began: a closed socket has forgotten its peer.
    assert.equal(line.remoteAddress, how === 'resets' ? FORWARDED_CLIENT : '127.0.0.1')
    // Timed until the close, 500 ms after the call began (less its connection's set-up on a busy host).
    assert.ok(Number(line.durationMs) >= 100, `durationMs ${line.durationMs}`)
    assert.equal(await durationCount(metricsOrigin, 'createPet', 499), 1)

    // The create goes on once the lock is gone (the client gave up, not the service): no second line.
    holder.exec('ROLLBACK')
    await waitFor(
      async () => {
        const listed = await fetch(`${server.origin}/v1/pets`, {
          headers: { authorization: `Bearer ${key}` },
        })
        return (
          ((await listed.json()) as Array<{ name: string }>).some((pet) => pet.name === 'Patient') ||
          undefined
        )
      },
      () => 'the create given up by its client was not made once the lock was gone',
      { everyMs: 100 },
    )
    await sleep(200)
    assert.equal(logLines(server).filter((logged) => logged.reqId === requestId).length, 1)
    assert.equal(await durationCount(metricsOrigin, 'createPet', 201), 0)
    await stop(server)
  })
}

test('when a client ends its side of the connection right after a complete create (a half-close), then that is giving up, as nginx reads it: no answer, a 499 line, the pet made all the same, and a retry with its Idempotency-Key answers with that pet', async (t) => {
  const cwd = temporaryDirectory(t)
  const server = await startServeProcess({ API_KEYS: `ops:${key}`, SQLITE_BUSY_TIMEOUT_MS: '60000' }, cwd)
  t.after(() => server.child.kill('SIGKILL'))
  // The create waits for this lock, so the client's end always comes before its answer could.
  const holder = new DatabaseSync(join(cwd, 'data', 'petstore.db'))
  t.after(() => holder.close())
  holder.exec('BEGIN IMMEDIATE')
  const [requestId, body] = [randomUUID(), JSON.stringify({ name: 'HalfClosed', categoryId: 1 })]
  const headers = {
    authorization: `Bearer ${key}`,
    'content-type': 'application/json',
    'idempotency-key': 'half-closed-1',
  }
  const socket = await openSocket(server.origin)
  let received = ''
  socket.on('data', (chunk) => {
    received += chunk
  })
  socket.end(
    `POST /v1/pets HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Request-Id: ${requestId}\r\n` +
      `${Object.entries(headers)
        .map(([name, value]) => `${name}: ${value}\r\n`)
        .join('')}Content-Length: ${body.length}\r\n\r\n${body}`,
  )
  await once(socket, 'close')
  assert.equal(received, '', 'an answer came to a client that had ended its side')
  const line = await waitForLog(server, (lines) =>
    lines.find((logged) => logged.reqId === requestId && logged.msg === 'request'),
  )
  assert.equal(line.status, 499)

  holder.exec('ROLLBACK')
  const retried = await waitFor(
    async () => {
      const response = await fetch(`${server.origin}/v1/pets`, { method: 'POST', headers, body })
      // 409 while the first create is still under way: retried, as a client would after Retry-After.
      return response.status === 409 ? undefined : response
    },
    () => 'the retry never stopped meeting the first create under way',
    { everyMs: 100 },
  )
  assert.equal(retried.status, 201)
  assert.equal(retried.headers.get('idempotent-replayed'), 'true', 'the first create, replayed')
  const pet = (await retried.json()) as { id: number; name: string }
  const listed = (await (
    await fetch(`${server.origin}/v1/pets`, { headers: { authorization: `Bearer ${key}` } })
  ).json()) as Array<{ id: number; name: string }>
  assert.deepEqual(
    listed.filter((listedPet) => listedPet.name === 'HalfClosed').map((listedPet) => listedPet.id),
    [pet.id],
    'one pet, the one the retry answered with',
  )
  await stop(server)
})
