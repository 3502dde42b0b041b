import assert from 'node:assert/strict'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, type TestContext, test } from 'node:test'
import { createClient, type Pet } from '../packages/client/src/index.ts'
import { rejection } from './helpers/client-on-server.ts'

const KEY = `psk_${'A'.repeat(43)}`

/** A server answering every request with `answer`, closed after the test; its requests are kept. */
async function answering(
  t: TestContext,
  answer: (request: IncomingMessage, response: ServerResponse) => void,
) {
  const requests: IncomingMessage[] = []
  const server = createServer((request, response) => {
    requests.push(request)
    answer(request, response)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.after(() => new Promise((resolve) => server.close(resolve)))
  t.after(() => server.closeAllConnections())
  const { port } = server.address() as AddressInfo
  return { baseUrl: `http://127.0.0.1:${port}/v1`, requests }
}

const json = (
  response: ServerResponse,
  status: number,
  body: string,
  headers: Record<string, string> = {},
) => {
  response.writeHead(status, { 'content-type': 'application/json', ...headers })
  response.end(body)
}

describe('typed client: answers no Pet Store service gives', () => {
  test('when an answer runs past 1 MiB, then the call stops reading it and throws unexpected_response', async (t) => {
    const { baseUrl } = await answering(t, (_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' })
      const chunk = Buffer.alloc(64 * 1024, 0x20)
      const more = () => {
        while (response.write(chunk)) if (response.destroyed) return
        response.once('drain', more)
      }
      more()
    })
    const error = await rejection(createClient({ baseUrl, apiKey: KEY }).listPets())
    assert.equal(error.code, 'unexpected_response')
    assert.equal(error.message, 'HTTP 200: an answer longer than 1048576 bytes (read no further)')
  })

  test('when the call is sent, then it asks for no compression and follows no redirect', async (t) => {
    const elsewhere = await answering(t, (_request, response) => json(response, 200, '[]'))
    const { baseUrl, requests } = await answering(t, (_request, response) => {
      response.writeHead(307, { location: `${elsewhere.baseUrl}/pets` })
      response.end()
    })
    const error = await rejection(createClient({ baseUrl, apiKey: KEY }).listPets())
    assert.deepEqual([error.code, error.status], ['unexpected_response', 307])
    assert.equal(requests[0]?.headers['accept-encoding'], 'identity')
    assert.equal(elsewhere.requests.length, 0, 'the redirect was followed')
  })

  test('when an Error body echoes the key or claims another status, then the error masks the key and keeps the real status', async (t) => {
    const { baseUrl } = await answering(t, (_request, response) =>
      json(response, 502, JSON.stringify({ code: 'x', message: `leaked Bearer ${KEY}`, status: 200 })),
    )
    const error = await rejection(createClient({ baseUrl, apiKey: KEY }).listPets())
    assert.equal(error.message, 'leaked Bearer psk_…')
    assert.equal(error.status, 502)
  })

  test('when an id is past int64 (a million digits), then it is no pet: unexpected_response, at once', async (t) => {
    const { baseUrl } = await answering(t, (_request, response) =>
      json(response, 200, `[{"id":${'9'.repeat(1_000_000)},"name":"Rex","categoryId":1}]`),
    )
    const started = performance.now()
    const error = await rejection(createClient({ baseUrl, apiKey: KEY }).listPets())
    assert.equal(error.code, 'unexpected_response')
    assert.ok(performance.now() - started < 2000, 'the digits were read as a number')
    const { baseUrl: justPast } = await answering(t, (_request, response) =>
      json(response, 200, '[{"id":9223372036854775808,"name":"Rex","categoryId":1}]'),
    )
    assert.equal(
      (await rejection(createClient({ baseUrl: justPast, apiKey: KEY }).listPets())).code,
      'unexpected_response',
    )
  })

  test('when a success body nests deeper than the stack allows (a 200 of 300,000 brackets), then it is no pet: unexpected_response, not a RangeError', async (t) => {
    const { baseUrl } = await answering(t, (_request, response) =>
      json(response, 200, `${'['.repeat(300_000)}${']'.repeat(300_000)}`),
    )
    const error = await rejection(createClient({ baseUrl, apiKey: KEY }).getPet(1n))
    assert.deepEqual([error.code, error.status], ['unexpected_response', 200])
  })

  test('when a next link is no URL, or an empty page links on, then paging stops with unexpected_response', async (t) => {
    const { baseUrl: broken } = await answering(t, (_request, response) =>
      json(response, 200, '[{"id":1,"name":"Rex","categoryId":1}]', { link: '<http://[>; rel="next"' }),
    )
    assert.equal(
      (await rejection(createClient({ baseUrl: broken, apiKey: KEY }).listPets())).code,
      'unexpected_response',
    )
    let page = 0
    const { baseUrl: endless, requests } = await answering(t, (_request, response) => {
      page++
      json(response, 200, '[]', { link: `</v1/pets?limit=20&cursor=c${page}>; rel="next"` })
    })
    const handed: Pet[] = []
    const error = await rejection(
      (async () => {
        for await (const pet of createClient({ baseUrl: endless, apiKey: KEY }).listAllPets())
          handed.push(pet)
      })(),
    )
    assert.equal(error.code, 'unexpected_response')
    assert.equal(requests.length, 1)
  })
})
