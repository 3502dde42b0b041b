import assert from 'node:assert/strict'
import { createServer, type Server, type Socket } from 'node:net'
import { describe, test } from 'node:test'
import { setImmediate as nextTurn } from 'node:timers/promises'
import autocannon from 'autocannon'
import { HttpConnections, requestBytes } from '../bench/http-connections.ts'
import type { LoadRequest } from '../bench/scenarios.ts'

// The fixed-rate generator's client, against a raw TCP server writing answers as the test says.

/** A server answering each request (its head) with `answer(count)`, written a byte at a time when asked. */
async function rawServer(
  answer: (count: number) => string,
  { byteByByte = false, closeAfter = false } = {},
): Promise<Server> {
  let count = 0
  const server = createServer((socket: Socket) => {
    let head = ''
    socket.on('error', () => {})
    socket.on('data', async (chunk) => {
      head += chunk.toString('latin1')
      while (head.includes('\r\n\r\n')) {
        head = head.slice(head.indexOf('\r\n\r\n') + 4)
        const bytes = Buffer.from(answer(++count), 'latin1')
        if (byteByByte) {
          for (const byte of bytes) {
            socket.write(Buffer.of(byte))
            await nextTurn()
          }
        } else {
          socket.write(bytes)
        }
        if (closeAfter) socket.end()
      }
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return server
}

const originOf = (server: Server) => {
  const address = server.address()
  assert.ok(address !== null && typeof address === 'object')
  return `http://127.0.0.1:${address.port}`
}

/** Three requests in a row on one connection: each answer's status, or the error's message. */
async function threeInARow(server: Server): Promise<string[]> {
  const origin = originOf(server)
  const connections = new HttpConnections(origin, 1)
  const bytes = requestBytes(origin, { method: 'GET', path: '/v1/pets', headers: {} })
  const seen: string[] = []
  try {
    for (let i = 0; i < 3; i++) {
      seen.push(String(await connections.request(bytes).catch((error: Error) => error.message)))
    }
  } finally {
    connections.close()
    server.close()
  }
  return seen
}

/** The bytes autocannon sends for `request`: the first request a raw server receives from it. */
async function autocannonBytes(request: LoadRequest): Promise<string> {
  let received = ''
  const server = createServer((socket: Socket) => {
    socket.on('data', (chunk) => {
      received += chunk.toString('latin1')
      socket.end('HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { method, path, headers, body } = request
  const requests = [{ method, path, headers, ...(body === undefined ? {} : { body }) }]
  await autocannon({ url: originOf(server), connections: 1, amount: 1, requests } as autocannon.Options)
  server.close()
  return received
}

describe("the bench's fixed-rate client", () => {
  // A request the service has not seen the like of (its headers' names or order) is new feedback for V8:
  // code it had optimized is thrown away and compiled again while the turn is timed.
  test('when a request is made, then its bytes are those autocannon sends for it, header for header', async () => {
    const get: LoadRequest = {
      method: 'GET',
      path: '/v1/pets?limit=20',
      headers: { authorization: 'Bearer k' },
    }
    const post: LoadRequest = {
      method: 'POST',
      path: '/v1/pets',
      headers: { authorization: 'Bearer k', 'content-type': 'application/json' },
      body: '{"name":"Rex"}',
    }
    for (const request of [get, post]) {
      const origin = 'http://127.0.0.1:1'
      const ours = requestBytes(origin, request).toString('latin1')
      const theirs = await autocannonBytes(request)
      assert.equal(ours.replace('127.0.0.1:1', 'HOST'), theirs.replace(/127\.0\.0\.1:\d+/, 'HOST'))
    }
  })

  test('when answers with a Content-Length come a byte at a time, then each ends where its length says and the next is read whole', async () => {
    const server = await rawServer(
      (count) => `HTTP/1.1 ${count === 2 ? 404 : 200} OK\r\ncontent-length: 9\r\n\r\n{"a":123}`,
      { byteByByte: true },
    )
    assert.deepEqual(await threeInARow(server), ['200', '404', '200'])
  })

  test('when answers come in chunks a byte at a time, with an extension on a chunk, then each ends after its last chunk', async () => {
    const chunked =
      'HTTP/1.1 201 Created\r\ntransfer-encoding: chunked\r\n\r\n5;x=1\r\n{"a":\r\nA\r\n1234567890\r\n1\r\n}\r\n0\r\n\r\n'
    const server = await rawServer(() => chunked, { byteByByte: true })
    assert.deepEqual(await threeInARow(server), ['201', '201', '201'])
  })

  test('when a chunk size is not hexadecimal, then that request fails and the connection is opened again for the next', async () => {
    const server = await rawServer((count) =>
      count === 1
        ? 'HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n'
        : 'HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}',
    )
    assert.deepEqual(await threeInARow(server), ['an answer whose end cannot be found', '200', '200'])
  })

  test('when an answer has neither a length nor chunks, then it fails, as its end cannot be found', async () => {
    const server = await rawServer(() => 'HTTP/1.1 200 OK\r\n\r\n{}')
    const seen = await threeInARow(server)
    assert.deepEqual(seen, Array(3).fill('an answer whose end cannot be found'))
  })

  test('when the server closes the connection after each answer, then every request is answered on a new one', async () => {
    const server = await rawServer(
      () => 'HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 2\r\n\r\n{}',
      {
        closeAfter: true,
      },
    )
    assert.deepEqual(await threeInARow(server), ['200', '200', '200'])
  })

  test('when the connections are closed with requests queued behind the busy ones, then every one of them fails', async () => {
    // Never answers: the first request waits on the one connection, the second is queued.
    const server = createServer((socket) => socket.on('error', () => {}))
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const origin = originOf(server)
    const connections = new HttpConnections(origin, 1)
    const bytes = requestBytes(origin, { method: 'GET', path: '/', headers: {} })
    try {
      const answers = [connections.request(bytes), connections.request(bytes)]
      await nextTurn()
      connections.close()
      const settled = await Promise.allSettled(answers)
      assert.deepEqual(
        settled.map((result) => result.status),
        ['rejected', 'rejected'],
      )
    } finally {
      server.close()
    }
  })
})
