import assert from 'node:assert/strict'
import { before, describe, test } from 'node:test'
import { checkedRawHttp } from './helpers/conformance-fetch.ts'
import { rawHttp } from './helpers/raw-http.ts'
import { startTestServer, suiteCleanup, type TestServer } from './helpers/test-server.ts'

// What Node's parser takes in a request line but RFC 9112 does not (other versions are its own 400).
describe('request lines Node takes and the service refuses', () => {
  let server: TestServer
  const cleanup = suiteCleanup()
  before(async () => {
    server = await startTestServer(cleanup)
  })

  for (const version of ['2.0', '0.9']) {
    test(`when a request line says HTTP/${version}, then 400 bad_request naming the version, and nothing is served`, async () => {
      const request = `GET /v1/pets HTTP/${version}\r\nHost: x\r\nAuthorization: Bearer ${server.key}\r\nConnection: close\r\n\r\n`
      const response = await rawHttp(server.origin, request)
      assert.equal(response.status, 400)
      const body = JSON.parse(response.body)
      assert.equal(body.code, 'bad_request')
      assert.ok(body.message.startsWith(`HTTP/${version} is not served here`), body.message)
    })
  }

  test('when a request target holds a fragment (#), then 400 bad_request naming the rule, not a query read from it', async () => {
    for (const target of ['/v1/pets#x', '/v1/pets?limit=2#x', '/v1/pets/1#x']) {
      const request = `GET ${target} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${server.key}\r\nConnection: close\r\n\r\n`
      const response = await checkedRawHttp(server.origin, request)
      assert.equal(response.status, 400, target)
      const body = JSON.parse(response.body)
      assert.equal(body.code, 'bad_request', target)
      assert.match(body.message, /#/, target)
    }
  })
})
