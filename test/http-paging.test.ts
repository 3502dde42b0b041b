import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { type ApiResponse, call } from './helpers/api-client.ts'
import { engineSuiteOptions, storeEngines } from './helpers/store-engines.ts'
import { startTestServer, type TestServer } from './helpers/test-server.ts'

// RFC 8288: a URI reference in angle brackets, then parameters; ours is exactly one link with rel="next".
// RFC 8288: the target is a URI reference (relative here: the test servers have no PUBLIC_BASE_URL).
const NEXT_LINK = /^<((?:https?:\/\/[^/>\s]+)?\/[^>\s]*)>; rel="next"$/

function nextPath(response: ApiResponse): string | undefined {
  const link = response.headers.get('link')
  if (link === null) return undefined
  const url = NEXT_LINK.exec(link)?.[1]
  assert.ok(url, `Link header is not RFC 8288 syntax: ${link}`)
  const { pathname, search } = new URL(url, 'http://resolved.invalid')
  return pathname + search
}

async function seed(server: TestServer, count: number, status?: 'available' | 'sold') {
  const statuses = ['available', 'pending', 'sold'] as const
  await Promise.all(
    Array.from({ length: count }, (_, i) =>
      server.store.createPet({
        pet: { name: `pet ${i}`, categoryId: BigInt(i), status: status ?? statuses[i % 3] },
      }),
    ),
  )
}

// More pages than any walk here needs: a next link that never ends fails the walk instead of hanging it.
const MAX_PAGES = 1000

/** Follows next links from `path` to the end; the ids of every page, in order. */
async function walk(
  server: TestServer,
  path: string,
  onPage: (page: number) => Promise<void> = async () => {},
) {
  const ids: bigint[] = []
  let next: string | undefined = path
  for (let page = 0; next !== undefined; page++) {
    assert.ok(page < MAX_PAGES, `the walk from ${path} did not end within ${MAX_PAGES} pages`)
    const response = await call(server, 'GET', next)
    assert.equal(response.status, 200, response.text)
    for (const match of response.text.matchAll(/"id":(\d+)/g)) ids.push(BigInt(match[1] as string))
    next = nextPath(response)
    await onPage(page)
  }
  return ids
}

for (const engine of storeEngines) {
  describe(`keyset paging (${engine.name})`, engineSuiteOptions(engine), () => {
    test('when more pets follow, then Link rel="next" keeps limit and status; the last page has none', async (t) => {
      const server = await startTestServer(t, { engine })
      await seed(server, 7, 'sold')
      const first = await call(server, 'GET', '/v1/pets?limit=3&status=sold')
      const next = new URL(`http://x${nextPath(first)}`)
      assert.equal(next.pathname, '/v1/pets')
      assert.equal(next.searchParams.get('limit'), '3')
      assert.equal(next.searchParams.get('status'), 'sold')
      assert.ok(next.searchParams.get('cursor'))
      const ids = await walk(server, '/v1/pets?limit=3&status=sold')
      assert.equal(ids.length, 7)
      const exact = await call(server, 'GET', '/v1/pets?limit=7')
      assert.equal(exact.headers.get('link'), null, 'no next link when the page holds the rest exactly')
    })

    // A long answer is kept as bytes, a short one as a string (representation.ts): both must leave alike.
    test('when a full page is long (over 2 KiB, names beyond ASCII) and read again from the cache, then the same bytes, length and ETag are answered, and HEAD gives the same length', async (t) => {
      const server = await startTestServer(t, { engine })
      const names = ['Zoë', 'ß\u00a0名前', '🐈 Felix', 'Ünïcødé "q"']
      for (let i = 0; i < 60; i++) {
        const pet = {
          name: `${names[i % names.length]} — pet ${i}`,
          categoryId: BigInt(i),
          status: 'sold' as const,
        }
        await server.store.createPet({ pet })
      }
      const path = '/v1/pets?limit=50'
      const [first, cached, head] = [
        await call(server, 'GET', path),
        await call(server, 'GET', path),
        await call(server, 'HEAD', path),
      ]
      assert.equal(first.status, 200)
      const bytes = Buffer.byteLength(first.text)
      const characters = first.text.length
      assert.ok(characters > 2048 && bytes > characters, `${bytes} bytes for ${characters} characters`)
      assert.equal(first.json.length, 50)
      assert.equal(first.json[2].name, '🐈 Felix — pet 2')
      for (const answer of [first, cached, head]) {
        assert.equal(answer.headers.get('content-length'), String(bytes))
        assert.equal(answer.headers.get('content-type'), 'application/json; charset=utf-8')
        assert.equal(answer.headers.get('etag'), first.headers.get('etag'))
      }
      assert.equal(cached.text, first.text)
      assert.equal(head.text, '')
    })

    test('when 1,000 pets are walked in pages while others are added, then no pet is repeated or missed', async (t) => {
      const server = await startTestServer(t, { engine })
      await seed(server, 1000)
      // The adder stops at page 15 (or when the walk ends before it, and in any case after 1,000 pets), and
      // the walk goes on only once its last create is committed: every added pet exists before the pages
      // that must show it are read.
      let adding = true
      let added = 0
      const adder = (async () => {
        while (adding && added < 1000) {
          await server.store.createPet({
            pet: { name: `late ${added++}`, categoryId: 1n, status: 'available' },
          })
        }
      })()
      let pages = 0
      const ids = await walk(server, '/v1/pets?limit=37', async (page) => {
        pages = page + 1
        if (page === 15) {
          adding = false
          await adder
        }
      }).finally(() => {
        adding = false
      })
      await adder
      assert.ok(pages > 15, `the walk of 1,000 pets in pages of 37 ended after ${pages} page(s)`)
      assert.ok(added > 0, 'pets were added during the walk')
      assert.deepEqual(
        ids,
        [...ids].sort((a, b) => (a < b ? -1 : 1)),
        'ascending',
      )
      assert.equal(new Set(ids).size, ids.length, 'no duplicate')
      const everything = (await server.store.listPets({ limit: 100_000 })).map((pet) => pet.id)
      assert.deepEqual(ids, everything, 'no gap: the walk saw every pet, including those added during it')
    })

    test('when the pets are filtered by status, then the walk returns exactly the pets with that status', async (t) => {
      const server = await startTestServer(t, { engine })
      await seed(server, 100)
      const ids = await walk(server, '/v1/pets?limit=10&status=pending')
      const expected = (await server.store.listPets({ limit: 1000, status: 'pending' })).map((pet) => pet.id)
      assert.deepEqual(ids, expected)
    })

    test('when the same page is asked with each status and without one, in turn, then each answer holds its own pets', async (t) => {
      const server = await startTestServer(t, { engine })
      await seed(server, 12)
      // Full pages, each asked twice (the second served from the read cache), in an order that puts every
      // filter after another one for the same page size.
      for (const status of ['sold', undefined, 'pending', 'available', undefined, 'sold'] as const) {
        const expected = (await server.store.listPets({ limit: 2, ...(status ? { status } : {}) })).map(
          (pet) => String(pet.id),
        )
        for (const attempt of [1, 2]) {
          const response = await call(server, 'GET', `/v1/pets?limit=2${status ? `&status=${status}` : ''}`)
          const ids = (JSON.parse(response.text) as Array<{ id: string | number }>).map(({ id }) =>
            String(id),
          )
          assert.deepEqual(ids, expected, `status ${status ?? 'none'}, attempt ${attempt}`)
        }
      }
    })

    test('when a cursor is altered (its bytes, or only its text), malformed or used with another status, then 400 invalid_query', async (t) => {
      const server = await startTestServer(t, { engine })
      await seed(server, 10, 'sold')
      const next = new URL(`http://x${nextPath(await call(server, 'GET', '/v1/pets?limit=2&status=sold'))}`)
      const cursor = next.searchParams.get('cursor') as string
      const [payload, mac] = cursor.split('.') as [string, string]
      const forged = `${Buffer.from('1.sold').toString('base64url')}.${mac}`
      const flipped = `${payload}.${mac.slice(0, -2)}${mac.endsWith('AA') ? 'BB' : 'AA'}`
      // The signature cut short: its first 4 and 15 bytes, each the real one's start.
      const cut = [`${payload}.${mac.slice(0, 6)}`, `${payload}.${mac.slice(0, 20)}`]
      // Other text for the same bytes: a last character's unused bits set, a character base64url lacks.
      const sameBytes = (text: string) => {
        const bytes = Buffer.from(text, 'base64url')
        const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'
        const last = [...alphabet].find(
          (char) => char !== text.at(-1) && Buffer.from(text.slice(0, -1) + char, 'base64url').equals(bytes),
        )
        assert.ok(last, `another last character for ${text}`)
        return text.slice(0, -1) + last
      }
      const respelt = [`${payload}.${sameBytes(mac)}`, `${payload}.${mac.slice(0, 4)}*${mac.slice(4)}`]
      if (payload.length % 4 !== 0) respelt.push(`${sameBytes(payload)}.${mac}`)
      for (const bad of [
        forged,
        flipped,
        ...cut,
        ...respelt,
        'garbage',
        `${cursor}.x`,
        `${payload}.`,
        '%00',
      ]) {
        const response = await call(
          server,
          'GET',
          `/v1/pets?limit=2&status=sold&cursor=${encodeURIComponent(bad)}`,
        )
        assert.equal(response.status, 400, bad)
        assert.equal(response.json.code, 'invalid_query')
        assert.match(response.json.message, /"cursor"/)
      }
      // A payload respelt, which the status filter's cursor may not allow: a list without one, after id 2.
      const plain = new URL(`http://x${nextPath(await call(server, 'GET', '/v1/pets?limit=2'))}`)
      const [plainPayload, plainMac] = (plain.searchParams.get('cursor') as string).split('.') as [
        string,
        string,
      ]
      assert.notEqual(plainPayload.length % 4, 0, `${plainPayload}: a last character with unused bits`)
      const respeltPlain = await call(
        server,
        'GET',
        `/v1/pets?limit=2&cursor=${sameBytes(plainPayload)}.${plainMac}`,
      )
      assert.equal(respeltPlain.status, 400)
      assert.match(respeltPlain.json.message, /"cursor" is malformed or was altered/)
      const other = await call(server, 'GET', `/v1/pets?limit=2&cursor=${cursor}`)
      assert.equal(other.status, 400)
      assert.match(other.json.message, /another status filter/)
    })
  })
}
