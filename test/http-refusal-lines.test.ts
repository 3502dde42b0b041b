import assert from 'node:assert/strict'
import { connect } from 'node:net'
import { describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { generateApiKey } from '../src/auth/api-key.ts'
import { temporaryDirectory } from './helpers/cleanup.ts'
import { logLines, startServeProcess, waitForLog } from './helpers/cli-process.ts'
import { rawHttp } from './helpers/raw-http.ts'

const REFUSED = 'request refused before it reached an operation'

/**
 * Sends the start of a request and never the rest; resolves with what the server answered. `then`: what
 * the client does 300 ms later (once its bytes were read), as one that gives up mid-body does: end its side
 * and read on, or close the connection and go.
 */
function sendHalfARequest(
  origin: string,
  start = 'GET /v1/pets?slow HTTP/1.1\r\nHost: x\r\n',
  then?: 'end' | 'destroy',
): Promise<string> {
  const { hostname, port } = new URL(origin)
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port) }, () => {
      socket.write(start)
      if (then !== undefined) setTimeout(() => socket[then](), 300)
    })
    let answer = ''
    socket.setEncoding('latin1')
    socket.on('data', (chunk) => {
      answer += chunk
    })
    socket.on('close', () => resolve(answer))
    socket.on('error', reject)
  })
}

describe('requests the HTTP layer refuses', () => {
  test('when a request is not valid HTTP, too slow, has too long a line or too large a head, or is a CONNECT, then it has its line at info and is counted by status', async (t) => {
    const key = generateApiKey()
    const server = await startServeProcess(
      { HEADERS_TIMEOUT_MS: '1000', REQUEST_TIMEOUT_MS: '2000', API_KEYS: `slow:${key}` },
      temporaryDirectory(t),
    )
    t.after(() => server.child.kill('SIGKILL'))
    const metricsPort = /metrics on port (\d+)/.exec(server.output())?.[1]
    assert.ok(metricsPort, server.output())

    const garbage = await rawHttp(server.origin, 'BAD METHOD /v1/pets HTTP/1.1\r\nHost: x\r\n\r\n')
    assert.equal(garbage.status, 400)
    const large = `GET /v1/pets?large HTTP/1.1\r\nHost: x\r\nX-Large: ${'a'.repeat(20_000)}\r\n\r\n`
    assert.equal((await rawHttp(server.origin, large)).status, 431)
    const overlong = `GET /v1/pets?${'b'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`
    assert.equal((await rawHttp(server.origin, overlong)).status, 414)
    // A target over 8 KiB in a head that fits is refused once routed: counted with its operation.
    const routed = `GET /v1/pets?${'c'.repeat(9000)} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`
    assert.equal((await rawHttp(server.origin, routed)).status, 414)
    assert.match(await sendHalfARequest(server.origin), /^HTTP\/1\.1 408 /)
    // Its head read and admitted, its body too slow: the line is that request's, under its own id.
    const slowBody = await sendHalfARequest(
      server.origin,
      `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nX-Request-Id: slow-1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"na`,
    )
    assert.match(slowBody, /^HTTP\/1\.1 408 [\s\S]*\r\nX-Request-Id: slow-1\r\n/i)
    const tunnel = await rawHttp(
      server.origin,
      'CONNECT /v1/pets HTTP/1.1\r\nHost: x\r\nX-Request-Id: t-1\r\n\r\n',
    )
    assert.equal(tunnel.status, 405)

    const lines = await waitForLog(server, (all) => {
      const refused = all.filter((line) => line.msg === REFUSED)
      return refused.length >= 6 ? refused : undefined
    })
    const slowLine = lines.find((line) => line.reqId === 'slow-1')
    assert.deepEqual([slowLine?.status, slowLine?.method, slowLine?.url], [408, 'POST', '/v1/pets'])
    const byStatus = new Map(lines.filter((line) => line !== slowLine).map((line) => [line.status, line]))
    assert.deepEqual([...byStatus.keys()].sort(), [400, 405, 408, 414, 431])
    for (const line of lines) {
      assert.equal(line.level, 30)
      assert.equal(line.remoteAddress, '127.0.0.1')
      assert.equal(typeof line.reqId, 'string')
      assert.equal(typeof line.code, 'string')
    }
    assert.equal(byStatus.get(431)?.code, 'headers_too_large')
    // A line too long to read is still logged by its method and the start of its target.
    assert.deepEqual([byStatus.get(414)?.code, byStatus.get(414)?.method], ['uri_too_long', 'GET'])
    assert.match(String(byStatus.get(414)?.url), /^\/v1\/pets\?b{2000}/)
    // Read from the bytes the parser held, which may be a later part of the head: only a whole line counts.
    assert.deepEqual([byStatus.get(400)?.method, byStatus.get(400)?.url], [undefined, undefined])
    assert.equal(byStatus.get(408)?.code, 'request_timeout')
    assert.equal(byStatus.get(400)?.reqId, garbage.headers['x-request-id'], 'the answer names its line')
    assert.deepEqual([byStatus.get(405)?.method, byStatus.get(405)?.reqId], ['CONNECT', 't-1'])

    const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text()
    for (const [status, count] of [
      [400, 1],
      [405, 1],
      [408, 2],
      [414, 1],
      [431, 1],
    ]) {
      assert.match(metrics, new RegExp(`^petstore_http_refused_total\\{status="${status}"\\} ${count}$`, 'm'))
    }
    assert.match(
      metrics,
      /^petstore_http_request_duration_seconds_count\{operation="listPets",status="414"\} 1$/m,
    )
  })

  test("when a request's path cannot be decoded (the router's own 400), then it has its access line and its duration is counted, as an unknown path's 404 has", async (t) => {
    const server = await startServeProcess({}, temporaryDirectory(t))
    t.after(() => server.child.kill('SIGKILL'))
    const metricsPort = /metrics on port (\d+)/.exec(server.output())?.[1]
    assert.ok(metricsPort, server.output())
    const paths = ['/v1/pets/%zz', '/nope/%zz', '/nope']
    for (const [i, path] of paths.entries()) {
      const answer = await fetch(`${server.origin}${path}`, {
        headers: { 'x-request-id': `undecodable-${i}` },
      })
      assert.equal(answer.status, path === '/nope' ? 404 : 400, path)
    }
    const lines = await waitForLog(server, (all) => {
      const found = all.filter((line) => String(line.reqId).startsWith('undecodable-'))
      return found.length >= paths.length ? found : undefined
    })
    assert.deepEqual(
      lines.map(({ msg, method, url, status, code, operation }) => [
        msg,
        method,
        url,
        status,
        code,
        operation,
      ]),
      [
        ['request', 'GET', '/v1/pets/%zz', 400, 'bad_request', 'unknown'],
        ['request', 'GET', '/nope/%zz', 400, 'bad_request', 'unknown'],
        ['request', 'GET', '/nope', 404, 'route_not_found', 'unknown'],
      ],
    )
    // Timed as any answer is: Fastify starts no timer for the router's errors.
    for (const line of lines) assert.ok(Number(line.durationMs) > 0, `${line.url}: ${line.durationMs} ms`)
    const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text()
    assert.match(
      metrics,
      /^petstore_http_request_duration_seconds_count\{operation="unknown",status="400"\} 2$/m,
    )
  })

  test('when a client ends its connection in the middle of a body, then it is answered that the body was cut short, and the line keeps the request id and the client address, read on or gone', async (t) => {
    const key = generateApiKey()
    const server = await startServeProcess({ API_KEYS: `ops:${key}` }, temporaryDirectory(t))
    t.after(() => server.child.kill('SIGKILL'))
    const cutShort = (id: string) =>
      `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nX-Request-Id: ${id}\r\nContent-Type: application/json\r\nContent-Length: 30\r\n\r\n{"na`
    const answer = await sendHalfARequest(server.origin, cutShort('cut-1'), 'end')
    assert.match(answer, /^HTTP\/1\.1 400 [\s\S]*\r\nX-Request-Id: cut-1\r\n/i)
    assert.match(
      answer,
      /\{"code":"bad_request","message":"the connection ended before the request body was complete","status":400\}$/,
    )
    await sendHalfARequest(server.origin, cutShort('cut-2'), 'destroy')
    for (const id of ['cut-1', 'cut-2']) {
      const line = await waitForLog(server, (all) => all.find((entry) => entry.reqId === id))
      assert.deepEqual(
        [line.msg, line.status, line.code, line.method, line.url, line.remoteAddress],
        [REFUSED, 400, 'bad_request', 'POST', '/v1/pets', '127.0.0.1'],
        id,
      )
    }
    // One line each: the connection's close, after the refusal, gives no request up (no 499 beside it).
    await sleep(300)
    for (const id of ['cut-1', 'cut-2'])
      assert.deepEqual(
        logLines(server)
          .filter((entry) => entry.reqId === id)
          .map((entry) => entry.status),
        [400],
        id,
      )
  })
})
