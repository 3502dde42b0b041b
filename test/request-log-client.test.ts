import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { request } from 'node:http'
import { describe, test } from 'node:test'
import { generateApiKey } from '../src/auth/api-key.ts'
import { temporaryDirectory } from './helpers/cleanup.ts'
import { type ServeProcess, startServeProcess, waitForLog } from './helpers/cli-process.ts'

const key = generateApiKey()
// Another loopback address: a real peer whose socket address differs from 127.0.0.1 (Linux routes 127/8).
const OTHER_PEER = '127.0.0.2'

interface Sent {
  status: number
  headers: Record<string, string | string[] | undefined>
}

/** One request over a socket bound to `from`, with `headers`; resolves with the answer's status and headers. */
function send(
  server: ServeProcess,
  from: string,
  headers: Record<string, string>,
  method = 'GET',
  body?: string,
  path = '/v1/pets',
): Promise<Sent> {
  const { hostname, port } = new URL(server.origin)
  return new Promise((resolve, reject) => {
    const outgoing = request(
      {
        host: hostname,
        port,
        localAddress: from,
        method,
        path,
        agent: false,
        headers: {
          authorization: `Bearer ${key}`,
          ...(body ? { 'content-type': 'application/json' } : {}),
          ...headers,
        },
      },
      (response) => {
        response.resume()
        response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers }))
      },
    )
    outgoing.setTimeout(10_000, () => outgoing.destroy(new Error('no answer within 10 s')))
    outgoing.on('error', reject)
    outgoing.end(body)
  })
}

/** The access line of the request sent with `requestId`, once written. */
function accessLine(server: ServeProcess, requestId: string) {
  return waitForLog(server, (lines) =>
    lines.find((line) => line.reqId === requestId && line.msg === 'request'),
  )
}

async function serve(t: test.TestContext, env: Record<string, string>): Promise<ServeProcess> {
  const server = await startServeProcess({ API_KEYS: `ops:${key}`, ...env }, temporaryDirectory(t))
  t.after(() => server.child.kill('SIGKILL'))
  return server
}

/** Sends from `from` with a forwarded address and a user agent; resolves with what the access line says. */
async function loggedClient(server: ServeProcess, from: string, forwardedFor: string) {
  const requestId = randomUUID()
  const sent = await send(server, from, {
    'x-request-id': requestId,
    'x-forwarded-for': forwardedFor,
    'user-agent': 'inventory-sync/2.3',
  })
  assert.equal(sent.status, 200)
  const line = await accessLine(server, requestId)
  return { remoteAddress: line.remoteAddress, userAgent: line.userAgent }
}

describe('the client in the request log', () => {
  test('when the peer is a trusted proxy, then the line shows the forwarded client; from any other peer, the socket address', async (t) => {
    const server = await serve(t, { TRUSTED_PROXIES: '127.0.0.1' })
    assert.deepEqual(await loggedClient(server, '127.0.0.1', '203.0.113.7'), {
      remoteAddress: '203.0.113.7',
      userAgent: 'inventory-sync/2.3',
    })
    // The chain is read from the right: the first address no trusted proxy vouches for is the client.
    assert.equal(
      (await loggedClient(server, '127.0.0.1', '198.51.100.9, 203.0.113.7')).remoteAddress,
      '203.0.113.7',
    )
    assert.equal((await loggedClient(server, OTHER_PEER, '203.0.113.7')).remoteAddress, OTHER_PEER)
  })

  test("when a trusted proxy forwards something that is not an IP address (a key, a quote, a forged field), then the line shows the proxy's own address; an address with its port, the address", async (t) => {
    const server = await serve(t, { TRUSTED_PROXIES: '127.0.0.1, 10.0.0.5' })
    const forwarded = generateApiKey()
    for (const text of [
      `${forwarded}"x`,
      'garbage"},{"forged":1',
      '203.0.113.7:99999',
      '[x]:80',
      '[2001:db8::1]',
    ]) {
      assert.equal((await loggedClient(server, '127.0.0.1', text)).remoteAddress, '127.0.0.1', text)
    }
    // Some balancers write the client's port too (`IP:port`, `[IPv6]:port`): the address is the client,
    // wherever the walk from the right stops, and a trusted proxy's entry with its port is walked past.
    for (const [text, client] of [
      ['203.0.113.7:80', '203.0.113.7'],
      ['[2001:db8::1]:443', '2001:db8::1'],
      ['203.0.113.7:80, 198.51.100.9:5555', '198.51.100.9'],
      ['198.51.100.1, 203.0.113.7:80', '203.0.113.7'],
      ['203.0.113.7:80, 10.0.0.5:1234', '203.0.113.7'],
      ['198.51.100.1, 203.0.113.7:80, 10.0.0.5', '203.0.113.7'],
      ['[1.2.3.4]:80', '127.0.0.1'],
      ['203.0.113.7:0', '127.0.0.1'],
    ] as const) {
      assert.equal((await loggedClient(server, '127.0.0.1', text)).remoteAddress, client, text)
    }
    assert.equal(server.output().includes(forwarded.slice(4)), false)
    assert.equal(server.output().includes('forged'), false)
    // An IPv6 client, as a proxy writes it, is taken.
    assert.equal((await loggedClient(server, '127.0.0.1', '2001:db8::1')).remoteAddress, '2001:db8::1')
  })

  for (const [setting, env] of [
    ['unset', {}],
    ['listing another address', { TRUSTED_PROXIES: '10.0.0.0/8, 192.0.2.1' }],
  ] as const) {
    test(`when TRUSTED_PROXIES is ${setting}, then X-Forwarded-For is ignored and the line shows the socket address`, async (t) => {
      const server = await serve(t, env)
      assert.deepEqual(await loggedClient(server, '127.0.0.1', '203.0.113.7'), {
        remoteAddress: '127.0.0.1',
        userAgent: 'inventory-sync/2.3',
      })
    })
  }

  test('when a trusted proxy forwards a scheme and host, then Location still follows PUBLIC_BASE_URL alone', async (t) => {
    const server = await serve(t, { TRUSTED_PROXIES: '127.0.0.1' })
    const forwarded = { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'elsewhere.test' }
    const created = await send(server, '127.0.0.1', forwarded, 'POST', '{"name":"Rex","categoryId":1}')
    assert.equal(created.status, 201)
    assert.match(String(created.headers.location), /^\/v1\/pets\/\d+$/)
  })

  test("when a request is refused, then its line names the Error body's code (a bad key apart from a bad query); an answered one has none", async (t) => {
    const server = await serve(t, {})
    const codeOf = async (headers: Record<string, string>, path = '/v1/pets') => {
      const requestId = randomUUID()
      await send(server, '127.0.0.1', { 'x-request-id': requestId, ...headers }, 'GET', undefined, path)
      return (await accessLine(server, requestId)).code
    }
    assert.equal(await codeOf({ authorization: `Bearer ${generateApiKey()}` }), 'unauthorized')
    assert.equal(await codeOf({}, '/v1/pets?limit=0'), 'invalid_query')
    assert.equal(await codeOf({}, '/v1/pets/99999'), 'pet_not_found')
    assert.equal(await codeOf({}), undefined)
  })

  test('when the user agent is very long, then the line keeps its first 256 characters', async (t) => {
    const server = await serve(t, {})
    const requestId = randomUUID()
    await send(server, '127.0.0.1', { 'x-request-id': requestId, 'user-agent': 'a'.repeat(4000) })
    const line = await accessLine(server, requestId)
    assert.equal(line.userAgent, `${'a'.repeat(256)}…`)
  })

  test('when the URL and user agent are text JSON escapes (quotes, backslashes, controls) and a trusted proxy forwards a long IPv6 zone, then the line stays under PIPE_BUF (4,096 bytes), so lines of workers never interleave', async (t) => {
    const server = await serve(t, { TRUSTED_PROXIES: '127.0.0.1' })
    const requestId = randomUUID()
    await send(
      server,
      '127.0.0.1',
      {
        'x-request-id': requestId,
        // Backslashes, then C1 controls (sent as bytes 0x85), which the line escapes as six bytes each.
        'user-agent': `${'\\'.repeat(60)}${'\u0085'.repeat(300)}`,
        'x-forwarded-for': `fe80::1%${'a'.repeat(3000)}`,
      },
      'GET',
      undefined,
      `/v1/pets?x=${'%22'.repeat(300)}${'"'.repeat(1500)}${'%01'.repeat(500)}`,
    )
    const line = await accessLine(server, requestId)
    const text =
      server
        .output()
        .split('\n')
        .find((each) => each.includes(requestId)) ?? ''
    assert.ok(Buffer.byteLength(text) < 4096, `a line of ${Buffer.byteLength(text)} bytes`)
    assert.equal(line.remoteAddress, '127.0.0.1', 'a zone no interface has is no client address')
    assert.match(String(line.url), /^\/v1\/pets\?x=(%22)+"+…$/)
    assert.match(String(line.userAgent), /^\\{60}\u0085+…$/)
    const agentInLine = /"userAgent":"(.*?)","msg"/.exec(text)?.[1] ?? ''
    assert.ok(
      Buffer.byteLength(agentInLine) <= 256 + 3,
      `the user agent takes ${Buffer.byteLength(agentInLine)} bytes`,
    )
  })

  test('when a key straddles the cut of the user agent or the URL, then no part of it reaches the log', async (t) => {
    const server = await serve(t, {})
    const leaked = generateApiKey()
    const requestId = randomUUID()
    const sent = await send(
      server,
      '127.0.0.1',
      {
        'x-request-id': requestId,
        'user-agent': `${'a'.repeat(240)}${leaked}`,
      },
      'GET',
      undefined,
      `/v1/pets?x=${'b'.repeat(2030)}${leaked}`,
    )
    assert.equal(sent.status, 400, 'an unknown query parameter is refused, and still logged')
    const line = await accessLine(server, requestId)
    assert.equal(line.userAgent, `${'a'.repeat(240)}psk_[redacted]`)
    assert.equal(String(line.url).length, 2049, 'the URL is cut at 2,048 characters')
    assert.ok(!server.output().includes(leaked.slice(4, 20)), 'not even a part of the key is in the log')
  })
})
