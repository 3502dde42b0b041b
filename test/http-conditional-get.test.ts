import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { call } from './helpers/api-client.ts'
import { startTestServer } from './helpers/test-server.ts'

// RFC 9110 §8.8.3: a strong entity tag is a quoted string of etagc characters, without W/.
const STRONG_ETAG = /^"[\x21\x23-\x7e]+"$/

describe('conditional GET', () => {
  test('when a pet is fetched again with its ETag, then 304 with no body; with another tag, then 200', async (t) => {
    const server = await startTestServer(t)
    const { json: pet } = await call(server, 'POST', '/v1/pets', { body: { name: 'Tagged', categoryId: 1 } })
    const first = await call(server, 'GET', `/v1/pets/${pet.id}`)
    const etag = first.headers.get('etag') ?? ''
    assert.match(etag, STRONG_ETAG)
    assert.equal(first.headers.get('cache-control'), 'private, no-cache')

    for (const ifNoneMatch of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
      const again = await call(server, 'GET', `/v1/pets/${pet.id}`, {
        headers: { 'if-none-match': ifNoneMatch },
      })
      assert.equal(again.status, 304, ifNoneMatch)
      assert.equal(again.text, '')
      assert.equal(again.headers.get('etag'), etag)
    }
    const changed = await call(server, 'GET', `/v1/pets/${pet.id}`, {
      headers: { 'if-none-match': '"other"' },
    })
    assert.equal(changed.status, 200)
    assert.equal(changed.text, first.text)
  })

  test('when the list changes, then its ETag changes and the old tag no longer gives 304', async (t) => {
    const server = await startTestServer(t)
    await call(server, 'POST', '/v1/pets', { body: { name: 'One', categoryId: 1 } })
    const before = await call(server, 'GET', '/v1/pets')
    const etag = before.headers.get('etag') ?? ''
    assert.match(etag, STRONG_ETAG)
    assert.equal((await call(server, 'GET', '/v1/pets', { headers: { 'if-none-match': etag } })).status, 304)
    await call(server, 'POST', '/v1/pets', { body: { name: 'Two', categoryId: 1 } })
    const after = await call(server, 'GET', '/v1/pets', { headers: { 'if-none-match': etag } })
    assert.equal(after.status, 200)
    assert.notEqual(after.headers.get('etag'), etag)
  })

  test('when a full page gains a next link (a pet added after it), then its ETag changes although its pets do not', async (t) => {
    const server = await startTestServer(t)
    for (const name of ['One', 'Two'])
      await call(server, 'POST', '/v1/pets', { body: { name, categoryId: 1 } })
    const before = await call(server, 'GET', '/v1/pets?limit=2')
    assert.equal(before.headers.get('link'), null)
    await call(server, 'POST', '/v1/pets', { body: { name: 'Three', categoryId: 1 } })
    // A client that keeps a page by its ETag would otherwise never learn of the next link, and stop there.
    const after = await call(server, 'GET', '/v1/pets?limit=2', {
      headers: { 'if-none-match': before.headers.get('etag') ?? '' },
    })
    assert.equal(after.status, 200)
    assert.equal(after.text, before.text)
    assert.match(after.headers.get('link') ?? '', /rel="next"/)
    assert.notEqual(after.headers.get('etag'), before.headers.get('etag'))
  })

  test('when a page with a next link is asked for again with its ETag, then the 304 carries that link, as the document says it may', async (t) => {
    const server = await startTestServer(t)
    for (const name of ['One', 'Two', 'Three'])
      await call(server, 'POST', '/v1/pets', { body: { name, categoryId: 1 } })
    const page = await call(server, 'GET', '/v1/pets?limit=2')
    const again = await call(server, 'GET', '/v1/pets?limit=2', {
      headers: { 'if-none-match': page.headers.get('etag') ?? '' },
    })
    assert.equal(again.status, 304)
    assert.equal(again.headers.get('link'), page.headers.get('link'))
    const document = (await call(server, 'GET', '/v1/openapi.json', { key: false })).json
    const notModified = document.paths['/pets'].get.responses['304']
    assert.ok(notModified.headers.Link, 'Link documented on the 304 too')
    assert.notEqual(notModified.headers.Link.required, true, 'only when more pets follow')
  })

  test('when the answer is an error or a create, then no ETag is sent', async (t) => {
    const server = await startTestServer(t)
    assert.equal((await call(server, 'GET', '/v1/pets/404')).headers.get('etag'), null)
    const created = await call(server, 'POST', '/v1/pets', {
      body: { name: 'New', categoryId: 1 },
      headers: { 'if-none-match': '*' },
    })
    assert.equal(created.status, 201)
    assert.equal(created.headers.get('etag'), null)
  })
})
