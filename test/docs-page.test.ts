import assert from 'node:assert/strict'
import { readdirSync } from 'node:fs'
import { describe, test } from 'node:test'
import { rawHttp } from './helpers/raw-http.ts'
import { startTestServer } from './helpers/test-server.ts'

// What each kind of asset the page references must be served as (nosniff makes browsers hold us to it).
// Charset names are case-insensitive: the plugin serves its theme stylesheet as `charset=UTF-8`.
const CONTENT_TYPES: Record<string, RegExp> = {
  js: /^(text|application)\/javascript; charset=utf-8$/i,
  css: /^text\/css; charset=utf-8$/i,
  png: /^image\/png$/,
}

/** Every `src` and `href` of an HTML page, resolved against the page's URL. */
function referencesOf(html: string, pageUrl: string): URL[] {
  return [...html.matchAll(/\b(?:src|href)="([^"]*)"/g)].map((match) => new URL(match[1] ?? '', pageUrl))
}

function cspDirectives(header: string | null): Map<string, string[]> {
  return new Map(
    (header ?? '')
      .split(';')
      .map((directive) => directive.trim().split(/\s+/))
      .filter(([name]) => name)
      .map(([name = '', ...sources]) => [name, sources]),
  )
}

describe('docs page', () => {
  test('when DOCS is on, then /docs and /docs/ serve the page with a strict CSP and the usual headers', async (t) => {
    const server = await startTestServer(t)
    for (const path of ['/docs', '/docs/']) {
      const response = await fetch(`${server.origin}${path}`)
      assert.equal(response.status, 200, path)
      assert.equal(response.headers.get('content-type'), 'text/html; charset=utf-8')
      assert.equal(response.headers.get('x-content-type-options'), 'nosniff')
      assert.equal(response.headers.get('cache-control'), 'no-store')
      const csp = cspDirectives(response.headers.get('content-security-policy'))
      assert.deepEqual(csp.get('default-src'), ["'none'"])
      assert.deepEqual(csp.get('script-src'), ["'self'"])
      assert.deepEqual(csp.get('style-src'), ["'self'"])
      assert.deepEqual(csp.get('img-src'), ["'self'", 'data:'])
      assert.deepEqual(csp.get('frame-ancestors'), ["'none'"])
      assert.deepEqual(csp.get('base-uri'), ["'none'"])
      // "Try it out" may reach this service and the deployments its document lists (none configured here).
      assert.deepEqual(csp.get('connect-src'), ["'self'"])
      assert.match(await response.text(), /<div id="swagger-ui">/)
    }
  })

  test('when the page is read, then it references only its own origin and every asset loads with its type', async (t) => {
    const server = await startTestServer(t)
    // The package's own entry points lead to the page; follow them as a browser would.
    for (const path of ['/docs/static/index.html', '/docs/static/']) {
      const redirected = await fetch(`${server.origin}${path}`)
      assert.equal(redirected.url, `${server.origin}/docs/`, path)
    }
    for (const page of ['/docs', '/docs/']) {
      const pageUrl = `${server.origin}${page}`
      const html = await (await fetch(pageUrl)).text()
      const external = (html.match(/https?:\/\/[^\s"'<>)]*/g) ?? []).filter(
        (url) => !url.startsWith(`${server.origin}/`),
      )
      assert.deepEqual(external, [], `${page} names no other origin`)
      const references = referencesOf(html, pageUrl)
      assert.ok(references.length >= 5, `${page} references its scripts and stylesheets`)
      for (const reference of references) {
        assert.equal(reference.origin, server.origin)
        const response = await fetch(reference)
        await response.arrayBuffer()
        assert.equal(response.status, 200, reference.pathname)
        const extension = reference.pathname.split('.').pop() ?? ''
        assert.match(response.headers.get('content-type') ?? '', CONTENT_TYPES[extension] ?? /^$/)
        assert.equal(response.headers.get('x-content-type-options'), 'nosniff')
      }
    }
  })

  test('when the page starts, then it renders the served OpenAPI document with no validator and no stored key', async (t) => {
    const server = await startTestServer(t)
    const initializer = await (await fetch(`${server.origin}/docs/static/swagger-initializer.js`)).text()
    assert.match(initializer, /validatorUrl: null/)
    assert.match(initializer, /"persistAuthorization":false/)
    assert.match(initializer, /url: resolveUrl\('\.\/json'\)/)
    const [rendered, served] = await Promise.all(
      ['/docs/json', '/v1/openapi.json'].map(async (path) => (await fetch(`${server.origin}${path}`)).json()),
    )
    assert.deepEqual(rendered, served)
  })

  test('when a package asset is fetched again with its ETag, then it is 304: cached, but revalidated', async (t) => {
    const server = await startTestServer(t)
    const url = '/docs/static/swagger-ui-bundle.js'
    const first = await server.app.inject({ url })
    assert.equal(first.statusCode, 200)
    assert.equal(first.headers['cache-control'], 'no-cache')
    const etag = String(first.headers.etag)
    const again = await server.app.inject({ url, headers: { 'if-none-match': etag } })
    assert.equal(again.statusCode, 304)
    assert.equal(again.body, '')
    // Built from config by the plugin, under the same folder: never kept.
    const initializer = await server.app.inject({ url: '/docs/static/swagger-initializer.js' })
    assert.equal(initializer.headers['cache-control'], 'no-store')
  })

  test('when any file of the package is asked for with Range or If-Match, then it is sent whole from memory with its ETag, never a part, a 412 or a 416', async (t) => {
    const server = await startTestServer(t)
    // Less the two the plugin builds itself from our options (its own routes).
    const files = readdirSync(new URL('./static/', import.meta.resolve('@fastify/swagger-ui'))).filter(
      (name) => name !== 'index.html' && name !== 'swagger-initializer.js',
    )
    assert.ok(files.includes('csp.json'), 'the package still ships a file of a type the others do not share')
    for (const name of files) {
      for (const headers of [{ range: 'bytes=0-5' }, { range: 'bytes=99999999-' }, { 'if-match': '"x"' }]) {
        const response = await fetch(`${server.origin}/docs/static/${name}`, { headers })
        const what = `${name} ${JSON.stringify(headers)}`
        assert.equal(response.status, 200, what)
        assert.match(String(response.headers.get('etag')), /^"[\w-]{27}"$/, `${what}: from memory`)
        assert.equal(response.headers.get('accept-ranges'), null, what)
        await response.arrayBuffer()
      }
    }
  })

  test('when a docs path is called with another method than GET or HEAD, then it is 405 with Allow', async (t) => {
    const server = await startTestServer(t)
    for (const [method, path] of [
      ['POST', '/docs'],
      ['PUT', '/docs/'],
      ['DELETE', '/docs/json'],
      ['POST', '/docs/static/swagger-ui.css'],
    ] as const) {
      const response = await fetch(`${server.origin}${path}`, { method })
      assert.equal(response.status, 405, `${method} ${path}`)
      assert.equal(response.headers.get('allow'), 'GET, HEAD')
      assert.deepEqual(await response.json(), {
        code: 'method_not_allowed',
        message: `${method} is not allowed here; allowed: GET, HEAD`,
        status: 405,
      })
    }
    const head = await fetch(`${server.origin}/docs`, { method: 'HEAD' })
    assert.equal(head.status, 200)
  })

  test('when an unknown path under /docs is asked for, then it is 404 in the Error body', async (t) => {
    const server = await startTestServer(t)
    // Sent as they are: fetch would resolve the dot segments before sending.
    for (const path of [
      '/docs/nothing',
      '/docs/static/nothing.js',
      '/docs/static/../../package.json',
      '/docs/static/%2e%2e/%2e%2e/package.json',
    ]) {
      const response = await rawHttp(
        server.origin,
        `GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
      )
      assert.equal(response.status, 404, path)
      assert.equal(JSON.parse(response.body).code, 'route_not_found')
    }
  })

  test('when a docs path holds a NUL byte (%00), then it is 400 in the Error body naming it', async (t) => {
    const server = await startTestServer(t)
    const response = await rawHttp(
      server.origin,
      'GET /docs/static/%00 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
    )
    assert.equal(response.status, 400)
    const body = JSON.parse(response.body)
    assert.equal(body.code, 'bad_request')
    assert.match(body.message, /%00/)
  })

  test('when DOCS is off, then /docs and its assets are 404 in the Error body', async (t) => {
    const server = await startTestServer(t, { env: { DOCS: 'off' } })
    for (const path of ['/docs', '/docs/', '/docs/json', '/docs/static/swagger-ui-bundle.js']) {
      const response = await fetch(`${server.origin}${path}`)
      assert.equal(response.status, 404, path)
      assert.deepEqual(await response.json(), {
        code: 'route_not_found',
        message: `no operation at GET ${path}`,
        status: 404,
      })
    }
  })

  test('when DOCS is on, then the OpenAPI document lists none of the docs routes', async (t) => {
    const server = await startTestServer(t)
    const document = (await (await fetch(`${server.origin}/v1/openapi.json`)).json()) as {
      paths: Record<string, unknown>
    }
    assert.deepEqual(Object.keys(document.paths).sort(), ['/pets', '/pets/{petId}'])
  })
})
