import assert from 'node:assert/strict'
import { readdirSync, readlinkSync } from 'node:fs'
import { describe, test } from 'node:test'
import { call } from './helpers/api-client.ts'
import { assertErrorBody } from './helpers/conformance-fetch.ts'
import { mostHeldAfter } from './helpers/held-memory.ts'
import { openSocket } from './helpers/raw-http.ts'
import { startTestServer } from './helpers/test-server.ts'

const PROBE = 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'
const MB = 1024 * 1024

describe('requests pipelined on one connection', () => {
  test('when a client pipelines more requests than wait for their answers at once, then the first 32 are answered in order, the next is 503 with Retry-After and Connection: close, and nothing after it is processed', async (t) => {
    const server = await startTestServer(t)
    // 32 requests waiting on one connection are not a leak: no warning says so.
    const warnings: string[] = []
    const onWarning = (warning: Error) => warnings.push(warning.name)
    process.on('warning', onWarning)
    t.after(() => process.off('warning', onWarning))
    const before = (await call(server, 'GET', '/v1/pets?limit=100')).json as unknown[]
    const pet = '{"name":"Rex","categoryId":1}'
    const create =
      `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${server.key}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${pet.length}\r\n\r\n${pet}`
    const text = await readUntilClosed(server.origin, `${PROBE.repeat(34)}${create}${PROBE.repeat(5)}`)
    const statuses = [...text.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((match) => Number(match[1]))
    assert.deepEqual(statuses, [...Array(32).fill(200), 503], 'then the connection closed')
    const refusal = text.slice(text.indexOf('HTTP/1.1 503 '))
    assert.match(refusal, /\r\nretry-after: 1\r\n/i)
    assert.match(refusal, /\r\nconnection: close\r\n/i)
    assertErrorBody(refusal.slice(refusal.indexOf('\r\n\r\n') + 4), 503, 'service_unavailable')
    const after = (await call(server, 'GET', '/v1/pets?limit=100')).json as unknown[]
    assert.equal(after.length, before.length, 'the create pipelined behind the 503 was not processed')
    assert.deepEqual(warnings, [])
  })

  // Each refused with Connection: close by the service (not by the client's own close, which stops Node).
  const closingRefusals = (key: string): Record<string, string> => ({
    'Host twice': 'GET /v1/pets HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n',
    'an Expect other than 100-continue': 'GET /v1/pets HTTP/1.1\r\nHost: a\r\nExpect: foo\r\n\r\n',
    'a key missing, its large body sent': `POST /v1/pets HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 70000\r\n\r\n${' '.repeat(70_000)}`,
    'a chunked body over the limit': `POST /v1/pets HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n1400\r\n${' '.repeat(5120)}\r\n0\r\n\r\n`,
  })
  test('when a request the service refuses with Connection: close has a create pipelined behind it, then only the refusal is answered and the create is not processed', async (t) => {
    const server = await startTestServer(t)
    for (const [refusal, bytes] of Object.entries(closingRefusals(server.key))) {
      const name = `behind ${refusal}`
      const pet = JSON.stringify({ name, categoryId: 1 })
      const create =
        `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${server.key}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(pet)}\r\n\r\n${pet}`
      const text = await readUntilClosed(server.origin, bytes + create)
      const statuses = [...text.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((match) => Number(match[1]))
      assert.equal(statuses.length, 1, `${refusal}: one answer, then the connection closed (${statuses})`)
      assert.match(text, /\r\nconnection: close\r\n/i, refusal)
      const pets = (await call(server, 'GET', '/v1/pets?limit=100')).json as { name: string }[]
      assert.deepEqual(
        pets.filter((stored) => stored.name === name),
        [],
        `${refusal}: the create pipelined behind it was not processed`,
      )
    }
  })

  test('when a request asks to upgrade the connection (which the service never does) and a create is pipelined behind it, then its answer says Connection: close and the connection ends, and the create is not processed', {
    timeout: 20_000,
  }, async (t) => {
    // Node reads nothing more of a connection after a request asking to upgrade it: what follows would wait
    // unanswered until the keep-alive timeout, longer here than the test's.
    const server = await startTestServer(t, { env: { KEEP_ALIVE_TIMEOUT_MS: '60000' } })
    for (const upgrade of ['websocket', 'h2c']) {
      const name = `behind an upgrade to ${upgrade}`
      const pet = JSON.stringify({ name, categoryId: 1 })
      const create =
        `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${server.key}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(pet)}\r\n\r\n${pet}`
      const asking =
        `GET /v1/pets?limit=1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${server.key}\r\n` +
        `Connection: Upgrade\r\nUpgrade: ${upgrade}\r\n\r\n`
      const text = await readUntilClosed(server.origin, asking + create)
      const statuses = [...text.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((match) => Number(match[1]))
      assert.deepEqual(statuses, [200], upgrade)
      assert.match(text, /\r\nconnection: close\r\n/i, upgrade)
      const pets = (await call(server, 'GET', '/v1/pets?limit=100')).json as { name: string }[]
      assert.deepEqual(
        pets.filter((stored) => stored.name === name),
        [],
        `${upgrade}: the create was processed`,
      )
    }
  })

  for (const path of ['/docs/static/swagger-ui-bundle.js', '/docs/json']) {
    test(`when a client pipelines 3,000 requests for ${path} and reads nothing, then the answers waiting hold megabytes, not hundreds`, {
      timeout: 30_000,
    }, async (t) => {
      // A paused connection does not see its client go: the send check lets it go, and the server close.
      const server = await startTestServer(t, { env: { SEND_TIMEOUT_MS: '1000' } })
      const deaf = await openSocket(server.origin)
      t.after(() => deaf.destroy())
      deaf.on('error', () => {})
      deaf.pause()
      const most = await mostHeldAfter(() =>
        deaf.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`.repeat(3000)),
      )
      assert.ok(most < 64 * MB, `${(most / MB).toFixed(0)} MB held for one connection`)
    })
  }

  test("when many connections pipeline requests for the docs page's bundle and read nothing, then no file is held open for them and the answers waiting share one copy of it", {
    timeout: 30_000,
  }, async (t) => {
    const server = await startTestServer(t, { env: { SEND_TIMEOUT_MS: '5000' } })
    const held = await mostHeldAfter(async () => {
      for (let i = 0; i < 20; i++) {
        const deaf = await openSocket(server.origin)
        t.after(() => deaf.destroy())
        deaf.on('error', () => {})
        deaf.pause()
        deaf.write('GET /docs/static/swagger-ui-bundle.js HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(30))
      }
    })
    // Each descriptor of this process, and what it is open on.
    const openFiles = readdirSync('/proc/self/fd').map((fd) => {
      try {
        return readlinkSync(`/proc/self/fd/${fd}`)
      } catch {
        return ''
      }
    })
    assert.deepEqual(
      openFiles.filter((file) => file.endsWith('.js')),
      [],
      'files held open for answers waiting',
    )
    assert.ok(held < 64 * MB, `${(held / MB).toFixed(0)} MB held for 20 connections`)
  })
})

/** What a connection that sends `bytes` reads until the server closes it. */
async function readUntilClosed(origin: string, bytes: string): Promise<string> {
  const socket = await openSocket(origin)
  let text = ''
  socket.on('data', (chunk: Buffer) => {
    text += chunk.toString('latin1')
  })
  socket.write(bytes)
  await new Promise((resolve) => socket.once('close', resolve))
  return text
}
