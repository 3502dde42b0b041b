import { connect } from 'node:net'
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.ts'
import type { Store } from '../../src/store/store.ts'
import { conformanceOf } from './api-client.ts'
import { within } from './bounded-wait.ts'
import type { TestServer } from './test-server.ts'
import { sendWire, type WireRequest, type WireResponse } from './wire-client.ts'

/** Sends raw bytes and checks the answer against the document the server serves (HEAD and 304 included). */
export async function sendChecked(server: TestServer, request: WireRequest): Promise<WireResponse> {
  const reply = await sendWire(server.origin, request)
  ;(await conformanceOf(server)).check({
    method: request.method,
    path: request.target,
    status: reply.status,
    headers: reply.headers,
    text: reply.text,
  })
  return reply
}

/** `method target` with these header lines (and body), checked against the document. */
export function ask(
  server: TestServer,
  method: string,
  target: string,
  headers: HeaderLines = [],
  body?: string,
) {
  return sendChecked(server, { method, target, headers, ...(body === undefined ? {} : { body }) })
}

export const bearer = (key: string): [string, string] => ['Authorization', `Bearer ${key}`]
export const json: [string, string] = ['Content-Type', 'application/json']

/** How many pets the store holds (read directly, not through the API). */
export async function petCount(server: TestServer): Promise<number> {
  return (await server.store.listPets({ limit: 100_000 })).length
}

export interface Operation {
  name: string
  method: string
  target: string
  body?: string
}

/** Every operation (HEAD of listPets too), as a request that a valid key would get served. */
export const operations: Operation[] = [
  { name: 'listPets', method: 'GET', target: '/v1/pets' },
  { name: 'listPets (HEAD)', method: 'HEAD', target: '/v1/pets' },
  { name: 'createPet', method: 'POST', target: '/v1/pets', body: '{"name":"Rex","categoryId":1}' },
  { name: 'getPet', method: 'GET', target: '/v1/pets/1' },
]

export type HeaderLines = Array<[string, string | Buffer]>

/**
 * Credential forms test/http-auth.test.ts does not already try (it has: none, empty, the scheme alone, Basic,
 * no scheme, an unknown key, a short key, a wrong prefix, two tokens; and, for listPets only, a key in the
 * query, two headers and a revoked key). `key` and `revoked` are the server's valid and a revoked key.
 */
export function malformedCredentials(
  key: string,
  revoked: string,
): Array<{ name: string; lines: HeaderLines; query?: string }> {
  const bearer = (value: string | Buffer): HeaderLines => [['Authorization', value]]
  return [
    { name: 'a tab between the scheme and the key', lines: bearer(`Bearer\t${key}`) },
    { name: 'the key glued to the scheme', lines: bearer(`Bearer${key}`) },
    { name: 'a colon after the scheme', lines: bearer(`Bearer: ${key}`) },
    { name: 'the key with trailing garbage', lines: bearer(`Bearer ${key}x`) },
    { name: 'the key and a comma', lines: bearer(`Bearer ${key},`) },
    { name: 'the key in quotes', lines: bearer(`Bearer "${key}"`) },
    { name: 'the key one character short', lines: bearer(`Bearer ${key.slice(0, -1)}`) },
    { name: 'the key in upper case', lines: bearer(`Bearer ${key.toUpperCase()}`) },
    { name: 'the key twice', lines: bearer(`Bearer ${key} ${key}`) },
    { name: 'a non-ASCII character after the key (UTF-8)', lines: bearer(Buffer.from(`Bearer ${key}é`)) },
    {
      name: 'a Latin-1 byte in the key',
      lines: bearer(Buffer.from(`Bearer ${key.slice(0, 10)}\u00e9${key.slice(11)}`, 'latin1')),
    },
    { name: 'a zero-width space after the key', lines: bearer(`Bearer ${key}\u200b`) },
    { name: 'a 12 KiB token', lines: bearer(`Bearer psk_${'A'.repeat(12_000)}`) },
    { name: 'a revoked key', lines: bearer(`Bearer ${revoked}`) },
    {
      name: 'the valid key in two Authorization headers',
      lines: [...bearer(`Bearer ${key}`), ...bearer(`Bearer ${key}`)],
    },
    { name: 'a valid and an empty Authorization header', lines: [...bearer(`Bearer ${key}`), ...bearer('')] },
    { name: 'the key in X-Api-Key', lines: [['X-Api-Key', key]] },
    { name: 'the key in a cookie', lines: [['Cookie', `api_key=${key}`]] },
    { name: 'the key in Proxy-Authorization', lines: [['Proxy-Authorization', `Bearer ${key}`]] },
    { name: 'the key in the query string only', lines: [], query: `api_key=${key}` },
  ]
}

/** A real store whose `method` rejects with `reason`, the way a broken database or driver would. */
export function failingStore(method: keyof Store, reason: unknown): Store {
  return new Proxy(new SqliteStore({ path: ':memory:', busyTimeoutMs: 100 }), {
    get(target, property, receiver) {
      if (property === method) return () => Promise.reject(reason)
      const value = Reflect.get(target, property, receiver)
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
}

// What an error body must never show: stack frames, source paths, SQL, driver or framework internals.
export const LEAK =
  /\n\s+at |\.ts:\d+|node_modules|\/srv\/|SELECT|INSERT|constraint|Cannot read|FST_|TypeError/i

/** Everything the server writes back to these raw bytes until it closes the connection (within 10 s). */
export function rawAnswer(origin: string, request: string): Promise<string> {
  const socket = connect({ host: '127.0.0.1', port: Number(new URL(origin).port) })
  let received = ''
  socket.on('data', (chunk) => {
    received += chunk
  })
  socket.on('error', () => {})
  const closed = new Promise<string>((resolve) => socket.on('close', () => resolve(received)))
  socket.write(request)
  const what = () => `the connection was not closed; received: ${JSON.stringify(received)}`
  return within(closed, 10_000, what).finally(() => socket.destroy())
}

/**
 * Streams a createPet body of `total` bytes as fast as the server takes it, until the server hangs up;
 * resolves with what it answered and how many bytes were handed to the socket by then.
 */
export async function streamOversizedBody(
  server: TestServer,
  total: number,
  key = server.key,
): Promise<{ answer: string; sent: number }> {
  const socket = connect({ host: '127.0.0.1', port: Number(new URL(server.origin).port) })
  socket.on('error', () => {}) // EPIPE or ECONNRESET: the server stopped reading, which is the point
  let answer = ''
  let closed = false
  socket.on('data', (chunk) => {
    answer += chunk
  })
  const done = new Promise((resolve) => socket.on('close', resolve)).then(() => {
    closed = true
  })
  const head = `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n`
  socket.write(`${head}Content-Type: application/json\r\nContent-Length: ${total}\r\n\r\n`)
  const chunk = Buffer.alloc(64 * 1024, 0x20)
  let sent = 0
  const streamed = (async () => {
    while (!closed && sent < total) {
      if (!socket.write(chunk))
        await Promise.race([new Promise((resolve) => socket.once('drain', resolve)), done])
      sent += chunk.length
    }
    if (!closed) socket.end() // all of it taken in: the caller's assertions say so
    await done
  })()
  // A server that stops reading and never hangs up fails here, not at the test's timeout.
  await within(
    streamed,
    20_000,
    () => `the connection was neither read on nor closed (${sent} bytes sent)`,
  ).finally(() => socket.destroy())
  return { answer, sent }
}

/** Fields a client might try to set besides NewPet's (http-strict-body.test.ts has `id` and `owner`). */
// biome-ignore format: a table
export const smuggledFields = [['created_at', '"2000-01-01"'], ['createdAt', '"2000-01-01"'],
  ['apiKeyId', '1'], ['api_key_id', '1'], ['hash', '"x"'], ['prototype', '{"admin":true}'],
  ['\\u005f\\u005fproto\\u005f\\u005f', '{"polluted":true}']]

/** Bodies under the size limit built to be expensive: deep nesting, many keys, escapes, long numbers. */
export const expensiveBodies = [
  '['.repeat(2000) + ']'.repeat(2000),
  `{${Array.from({ length: 450 }, (_, i) => `"k${i}":0`).join(',')}}`,
  `{"name":"${'\\u0000'.repeat(650)}","categoryId":1}`,
  `{"name":"a","categoryId":${'9'.repeat(4000)}}`,
  `{"name":"a","categoryId":1,"x":${'{"a":'.repeat(600)}1${'}'.repeat(600)}}`,
]

/** One request for each kind of answer: served, refused, not found, router and HTTP parser errors. */
export function answerKinds(key: string, served: string[]): Array<[string, string, HeaderLines, string?]> {
  const auth = bearer(key)
  // biome-ignore format: a table
  return [...served.map((target): [string, string, HeaderLines] => ['GET', target, [auth]]),
    ['POST', '/v1/pets', [auth, json], '{"name":"Rex","categoryId":1}'],
    ['POST', '/v1/pets', [auth, json], '{'], ['GET', '/v1/pets', []], ['DELETE', '/v1/pets', []],
    ['GET', '/nowhere', []], ['GET', '/v1/pets/%zz', [auth]],
    ['GET', '/v1/pets', [['X-Big', 'a'.repeat(20_000)]]], ['FOO', '/v1/pets', []]]
}
