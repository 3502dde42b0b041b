import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { startTestServer, type TestServer } from './helpers/test-server.ts'

// What a deployment advertises: the document, the docs page and what the page loads to render it (the
// initializer only loads ./json, and its comments cite other sites, so it is searched for placeholders only).
const ADVERTISING_PATHS = ['/v1/openapi.json', '/docs', '/docs/', '/docs/json', '/docs/yaml']
const INITIALIZER = '/docs/static/swagger-initializer.js'
// A host under the reserved `.example` top-level domain (RFC 2606), such as a placeholder default.
const EXAMPLE_HOST = /[a-z0-9-]+\.example\b/i

async function headersAndBody(server: TestServer, path: string): Promise<string> {
  const response = await fetch(`${server.origin}${path}`)
  assert.equal(response.status, 200, path)
  return `${[...response.headers].join('\n')}\n${await response.text()}`
}

/** Every host named by an absolute URL in the bodies and headers of the advertising paths. */
async function advertisedHosts(server: TestServer): Promise<Set<string>> {
  const hosts = new Set<string>()
  for (const path of [...ADVERTISING_PATHS, INITIALIZER]) {
    const text = await headersAndBody(server, path)
    assert.doesNotMatch(text, EXAMPLE_HOST, path)
    if (path === INITIALIZER) continue
    for (const [url] of text.matchAll(/https?:\/\/[^\s"'<>;)]+/g)) hosts.add(new URL(url).host)
  }
  hosts.delete(new URL(server.origin).host)
  return hosts
}

async function serversOf(server: TestServer): Promise<string[]> {
  const document = (await (await fetch(`${server.origin}/v1/openapi.json`)).json()) as {
    servers: Array<{ url: string }>
  }
  return document.servers.map((entry) => entry.url)
}

async function connectSources(server: TestServer): Promise<string[]> {
  const csp = (await fetch(`${server.origin}/docs/`)).headers.get('content-security-policy') ?? ''
  const directive = csp.split(';').find((part) => part.trim().startsWith('connect-src')) ?? ''
  return directive.trim().split(/\s+/).slice(1)
}

describe('OpenAPI servers and the docs page', () => {
  test('when no base URL is set, then only the relative /v1 is advertised and no other host appears', async (t) => {
    const server = await startTestServer(t)
    assert.deepEqual(await serversOf(server), ['/v1'])
    assert.deepEqual([...(await advertisedHosts(server))], [])
    assert.deepEqual(await connectSources(server), ["'self'"])
  })

  test('when the base URLs are set, then exactly those are advertised, this deployment first', async (t) => {
    const server = await startTestServer(t, {
      env: {
        PUBLIC_BASE_URL: 'https://staging.pets.test/v1',
        PRODUCTION_BASE_URL: 'https://pets.test/v1',
        STAGING_BASE_URL: 'https://staging.pets.test/v1',
      },
    })
    assert.deepEqual(await serversOf(server), ['https://staging.pets.test/v1', 'https://pets.test/v1'])
    assert.deepEqual([...(await advertisedHosts(server))].sort(), ['pets.test', 'staging.pets.test'])
    assert.deepEqual(await connectSources(server), [
      "'self'",
      'https://staging.pets.test',
      'https://pets.test',
    ])
  })

  test('when only production is set, then the relative /v1 and production are advertised', async (t) => {
    const server = await startTestServer(t, { env: { PRODUCTION_BASE_URL: 'https://pets.test/v1' } })
    assert.deepEqual(await serversOf(server), ['/v1', 'https://pets.test/v1'])
    assert.deepEqual([...(await advertisedHosts(server))], ['pets.test'])
  })

  test('when no base URL is set, then the docs page calls the API on its own origin', async (t) => {
    const server = await startTestServer(t)
    // Swagger UI resolves a relative server against the URL it loaded the document from.
    const documentUrl = new URL('./json', `${server.origin}/docs/`)
    const base = new URL((await serversOf(server))[0] ?? '', documentUrl)
    const response = await fetch(`${base.href}/pets`, { headers: { authorization: `Bearer ${server.key}` } })
    assert.equal(response.status, 200)
    assert.equal(base.origin, server.origin)
  })
})
