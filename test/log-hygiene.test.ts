import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { generateApiKey } from '../src/auth/api-key.ts'
import { maskApiKeys, maskKeyStartAtEnd } from '../src/log/key-masking.ts'
import { visibleControls } from '../src/log/logger.ts'
import { call } from './helpers/api-client.ts'
import { temporaryDirectory } from './helpers/cleanup.ts'
import { exitWithin, logLines, startServeProcess, waitForLog } from './helpers/cli-process.ts'
import { checkedFetch } from './helpers/conformance-fetch.ts'
import { rawHttp } from './helpers/raw-http.ts'
import { startTestServer } from './helpers/test-server.ts'

const key = generateApiKey()
const REFUSED = 'request refused before it reached an operation'
const secret = key.slice('psk_'.length)
const hex = (text: string, lower = false) =>
  [...text].map((c) => `%${c.charCodeAt(0).toString(16)[lower ? 'toLowerCase' : 'toUpperCase']()}`).join('')

/** The key as it may be written into a URL: each form must appear nowhere in the output either. */
const encodedForms = {
  'underscore encoded': `psk%5F${secret}`,
  'underscore encoded, lower case': `psk%5f${secret}`,
  'fully encoded': hex(key),
  'fully encoded, lower case': hex(key, true),
  'encoded twice': hex(key).replaceAll('%', '%25'),
  'prefix encoded': `${hex('psk_')}${secret}`,
  'mixed, twice': `p%2573k%255F${secret.slice(0, 20)}${hex(secret.slice(20))}`,
  'prefix in capitals': `PSK_${secret}`,
  'prefix in mixed case': `Psk_${secret}`,
}

/** Calls the service with a valid key somewhere else than where keys belong (or also there). */
async function sendKeyEverywhere(origin: string): Promise<void> {
  const bearer = { authorization: `Bearer ${key}` }
  const call = (path: string, init: RequestInit = {}) =>
    checkedFetch(origin, path, { ...init, headers: { ...bearer, ...init.headers } })
  for (const form of [key, ...Object.values(encodedForms)]) {
    assert.equal((await call(`/v1/pets?x=${form}`)).status, 400)
    assert.equal((await call(`/v1/pets?status=${form}`)).status, 400)
    assert.equal((await call(`/v1/pets/${form}`)).status, 400)
    assert.equal((await call(`/v1/${form}`)).status, 404)
    assert.equal((await call(`/v1/pets?limit=5&cursor=${form}`)).status, 400)
  }
  for (const id of [key, `trace.${key}`, `${key}:1`]) {
    const response = await call('/v1/pets', { headers: { 'x-request-id': id } })
    assert.equal(response.status, 200)
    assert.match(response.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/, 'replaced, not echoed')
  }
  const headers = [
    { 'x-api-key': key },
    { cookie: `session=${key}` },
    { authorization: `Basic ${key}` },
    { authorization: `Bearer ${key}x` },
    { authorization: key },
  ]
  for (const extra of headers) await call('/v1/pets', { headers: extra })
  await call('/v1/pets', {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': key },
    body: '{"name":"Rex","categoryId":1}',
  })
  await call('/v1/pets', { method: 'POST', headers: { 'content-type': `application/${key}` }, body: '{}' })
  await call('/v1/pets', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: `{"name":"${key}","categoryId":1,"${key}":1}`,
  })
  await call('/v1/pets', { method: 'POST', headers: { 'content-type': 'application/json' }, body: `{${key}` })
  await rawHttp(origin, `GET /v1/pets/%ZZ${key} HTTP/1.1\r\nHost: petstore\r\nConnection: close\r\n\r\n`)
  await rawHttp(origin, `GET /v1/pets?${key} HTTP/1.1\r\nHost: petstore\r\nBad Header ${key}\r\n\r\n`)
}

function assertNoKey(output: string): void {
  assert.equal(output.includes(secret), false, 'the key (its random part) is written somewhere')
  for (const [name, form] of Object.entries(encodedForms)) {
    for (const variant of [form, form.toLowerCase(), form.toUpperCase()]) {
      assert.equal(output.includes(variant), false, `the key, ${name}, is written: ${variant}`)
    }
  }
}

describe('keys never reach the log', () => {
  test('when a key is in a text, plain or percent-encoded once or thrice, then exactly the key is replaced, nothing of it left', () => {
    const key = generateApiKey()
    assert.equal(maskApiKeys(`a ${key} b`), 'a psk_[redacted] b')
    assert.equal(
      maskApiKeys(`${key},${generateApiKey()}`),
      'psk_[redacted],psk_[redacted]',
      'every key in it',
    )
    assert.equal(maskApiKeys(`a ${key.replace('_', '%5F')} b`), 'a psk_[redacted] b')
    assert.equal(maskApiKeys(`a ${key.replace('_', '%25255f')} b`), 'a psk_[redacted] b')
  })

  test('when a text ends within a key (plain or percent-encoded, cut within a code or not), then what is left of the key is masked, and a text ending before its random part is left as it is', () => {
    for (const cut of [
      key.slice(0, 5),
      key.slice(0, -1),
      key,
      hex(key).slice(0, 40),
      hex(key).slice(0, 41),
      hex(key, true).slice(0, 100),
      encodedForms['encoded twice'].slice(0, 52),
      encodedForms['mixed, twice'].slice(0, 30),
      encodedForms['prefix in capitals'].slice(0, 12),
      'psk_%5',
    ]) {
      assert.equal(maskKeyStartAtEnd(`x=${cut}`), 'x=psk_[redacted]', cut)
    }
    for (const harmless of ['x=psk', 'x=%70%73%6B']) assert.equal(maskKeyStartAtEnd(harmless), harmless)
  })

  test('when a text is crafted to make the key pattern try every way of reading it (16 KB, %2525 runs after a prefix), then masking it stays quick: no request can hold the event loop with it', () => {
    // Each %2525 reads as one character or three; 14 of them in a row made the pattern try thousands of
    // splits at every prefix: 0.1 to 0.2 s a text, for a request needing no key. Now a few milliseconds.
    const unit = `%70sk_${'%2525'.repeat(14)}22!`
    const crafted = unit.repeat(Math.ceil(16_384 / unit.length)).slice(0, 16_384)
    // The quickest of five: a pause of the whole process (a busy host, a collection) cannot reach all five.
    const tookMs = Math.min(
      ...Array.from({ length: 5 }, () => {
        const started = performance.now()
        assert.equal(maskApiKeys(crafted), crafted, 'nothing in it is a key')
        return performance.now() - started
      }),
    )
    assert.ok(tookMs < 30, `masking took ${Math.round(tookMs)} ms at the quickest of five`)
  })

  test('when a valid key is sent in the URL (plain or percent-encoded), as the request id, in other headers and in bodies, then the JSON log at info never holds it, and each request still has its line', async (t) => {
    const server = await startServeProcess({ API_KEYS: `ops:${key}` }, temporaryDirectory(t))
    t.after(() => server.child.kill('SIGKILL'))
    await sendKeyEverywhere(server.origin)
    // The last call's line is written after its answer: wait for the count rather than for a while.
    const requestLines = await waitForLog(server, (lines) => {
      const found = lines.filter((line) => line.msg === 'request')
      return found.length >= 5 * 8 + 3 + 5 + 4 ? found : undefined
    })
    assert.ok(
      requestLines.some((line) => String(line.url).includes('psk_[redacted]')),
      'URLs are kept, masked',
    )
    assertNoKey(server.output())
    assert.ok(logLines(server).length > 0)
  })

  test('when a request line too long for the head holds a key across the point where the logged URL is cut, then its refused line holds the key masked, nothing of it in clear', async (t) => {
    const server = await startServeProcess({ API_KEYS: `ops:${key}` }, temporaryDirectory(t))
    t.after(() => server.child.kill('SIGKILL'))
    // Each form starts 30 characters before the URL's 2048th, where the line cuts it.
    const start = '/v1/pets?x='
    const lead = 'a'.repeat(2048 - 30 - start.length)
    const forms = [key, ...Object.values(encodedForms)]
    for (const form of forms) {
      const answer = await rawHttp(
        server.origin,
        `GET ${start}${lead}${form}&${'b'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`,
      )
      assert.equal(answer.status, 414)
    }
    const lines = await waitForLog(server, (all) => {
      const found = all.filter((line) => line.msg === REFUSED && line.status === 414)
      return found.length >= forms.length ? found : undefined
    })
    for (const line of lines) {
      assert.equal(String(line.url).replace(`${start}${lead}`, ''), `psk_[redacted]&${'b'.repeat(15)}…`)
    }
    assertNoKey(server.output())
  })

  test('when a request target in absolute form carries a user and password, then it is refused with 400, and the password reaches neither the answer nor the log', async (t) => {
    const server = await startServeProcess({ API_KEYS: `ops:${key}` }, temporaryDirectory(t))
    t.after(() => server.child.kill('SIGKILL'))
    // An `@` of its own, unencoded as careless clients leave it.
    const password = 'hunter2@in-a-url'
    const response = await rawHttp(
      server.origin,
      `GET http://app:${password}@petstore/v1/pets HTTP/1.1\r\nHost: petstore\r\nAuthorization: Bearer ${key}\r\nConnection: close\r\n\r\n`,
    )
    assert.equal(response.status, 400)
    assert.match(response.body, /"code":"bad_request"/)
    assert.equal(response.body.includes(password), false, response.body)
    const [line] = await waitForLog(server, (lines) => {
      const found = lines.filter((line) => line.msg === 'request' && line.status === 400)
      return found.length > 0 ? found : undefined
    })
    assert.equal(line?.url, 'http://[redacted]@petstore/v1/pets')
    for (const part of password.split('@')) {
      assert.equal(server.output().includes(part), false, `the password's "${part}" is written somewhere`)
    }
  })

  test("when the log is pretty, then a client's terminal controls reach it as visible escapes", async (t) => {
    const server = await startServeProcess(
      { API_KEYS: `ops:${key}`, LOG_FORMAT: 'pretty' },
      temporaryDirectory(t),
    )
    t.after(() => server.child.kill('SIGKILL'))
    // Header bytes are read as latin1: 0x9B is U+009B, a terminal's CSI (as ESC [ is), and 0x85 is NEL.
    const agent = Buffer.from([0x61, 0x9b, 0x33, 0x31, 0x6d, 0x52, 0x45, 0x44, 0x85, 0x62])
    const head = Buffer.from('GET /v1/pets HTTP/1.1\r\nHost: x\r\nConnection: close\r\nUser-Agent: ')
    const response = await rawHttp(server.origin, Buffer.concat([head, agent, Buffer.from('\r\n\r\n')]))
    assert.equal(response.status, 401)
    server.child.kill('SIGTERM')
    assert.equal(await exitWithin(server), 0)
    assert.match(
      server.output(),
      /a\\+u009b31mRED\\+u0085b/,
      'the agent was written, its controls as escapes',
    )
    assert.doesNotMatch(
      server.output(),
      /[\u0080-\u009f\u2028\u2029]/,
      'no C1 control or separator written raw',
    )
  })

  test('when a pretty line is made, then every escape that decodes to a terminal control is kept as text, and only those', () => {
    const cases: Array<[unknown, unknown]> = [
      ['a\u001b[31mb\rc\u0007\b\f\u007f', 'a\\u001b[31mb\\rc\\u0007\\b\\f\\u007f'],
      ['x\u009by\u2028z\u2029', 'x\\u009by\\u2028z\\u2029'],
      // A stack's lines and tabs stay lines; text that only looks like an escape is left as it is.
      ['at a\n\tat b', 'at a\n\tat b'],
      ['\\u001b and \\r', '\\u001b and \\r'],
      ['é 😀 \ud83d " \\', 'é 😀 \ud83d " \\'],
    ]
    for (const [value, shown] of cases) {
      assert.deepEqual(JSON.parse(visibleControls(JSON.stringify({ msg: value }))), { msg: shown })
    }
  })

  test('when the log is pretty, then it never holds the key either', async (t) => {
    const server = await startServeProcess(
      { API_KEYS: `ops:${key}`, LOG_FORMAT: 'pretty' },
      temporaryDirectory(t),
    )
    t.after(() => server.child.kill('SIGKILL'))
    await sendKeyEverywhere(server.origin)
    server.child.kill('SIGTERM')
    assert.equal(await exitWithin(server), 0)
    assert.match(server.output(), /psk_\[redacted\]/, 'the lines were written')
    assertNoKey(server.output())
  })
})

describe('keys never come back in an answer', () => {
  test('when a key is written where an error message names what it refuses (the path, a media type, a field, an Expect), then the answer says psk_[redacted]', async (t) => {
    const server = await startTestServer(t)
    const echoes = [
      await call(server, 'GET', `/${server.key}`),
      await call(server, 'POST', '/v1/pets', {
        body: '{}',
        headers: { 'content-type': `text/${server.key}` },
      }),
      await call(server, 'POST', '/v1/pets', { body: { name: 'Rex', categoryId: 1, [server.key]: 1 } }),
      await call(server, 'POST', '/v1/pets', { body: '{}', headers: { 'content-encoding': server.key } }),
    ]
    for (const answer of echoes) {
      assert.ok(answer.status >= 400, answer.text)
      assert.ok(!answer.text.includes(server.key.slice('psk_'.length)), answer.text)
      assert.match(answer.text, /psk_\[redacted\]/, answer.text)
    }
    // A key cut by the message's bounds (a path's 200 characters, a message's 500) leaves none of itself.
    const secretPart = server.key.slice('psk_'.length, 'psk_'.length + 8)
    for (const padding of [160, 190, 196]) {
      const cut = await call(server, 'GET', `/${'a'.repeat(padding)}${server.key}`)
      assert.ok(!cut.text.includes(secretPart), cut.text)
    }
    // A field's name is cut at 64 characters: the key cut there, in its middle and past its end.
    for (const padding of [30, 52, 470]) {
      const longField = await call(server, 'POST', '/v1/pets', {
        body: { name: 'Rex', categoryId: 1, [`${'f'.repeat(padding)}${server.key}`]: 1 },
      })
      assert.equal(longField.status, 400, longField.text)
      assert.ok(!longField.text.includes(secretPart), longField.text)
    }
    const expect = await rawHttp(
      server.origin,
      `POST /v1/pets HTTP/1.1\r\nHost: x\r\nExpect: ${server.key}\r\nContent-Length: 2\r\n\r\n`,
    )
    assert.equal(expect.status, 417, expect.body)
    assert.ok(!expect.body.includes(server.key.slice('psk_'.length)), expect.body)
  })
})
