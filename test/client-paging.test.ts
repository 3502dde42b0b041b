import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { createClient, type Pet } from '../packages/client/src/index.ts'
import { clientOnServer, collect, rejection } from './helpers/client-on-server.ts'
import { startTestServer } from './helpers/test-server.ts'

/** Six pets, and a client whose answers' Link header is rewritten on the way, as a proxy might. */
async function clientWithLinksRewritten(
  t: Parameters<typeof startTestServer>[0],
  rewrite: (link: string, url: string) => string,
) {
  const server = await startTestServer(t)
  const seed = createClient({ baseUrl: `${server.origin}/v1`, apiKey: server.key })
  for (let i = 0; i < 6; i++) await seed.createPet({ name: `Pet ${i}`, categoryId: 1n })
  return createClient({
    baseUrl: `${server.origin}/v1`,
    apiKey: server.key,
    fetch: async (url, init) => {
      const answer = await fetch(url, init)
      const link = answer.headers.get('link')
      if (link === null) return answer
      const headers = new Headers(answer.headers)
      headers.set('link', rewrite(link, url))
      return new Response(await answer.arrayBuffer(), { status: answer.status, headers })
    },
  })
}

describe('typed client: paging', () => {
  test('when a page is listed, then it holds at most limit pets in id order and next leads to the rest', async (t) => {
    const { client } = await clientOnServer(t)
    const created: Pet[] = []
    for (const name of ['A', 'B', 'C']) created.push(await client.createPet({ name, categoryId: 1n }))
    const first = await client.listPets({ limit: 2 })
    assert.deepEqual(first.pets, created.slice(0, 2))
    assert.equal(first.next?.limit, 2)
    assert.equal(typeof first.next?.cursor, 'string')
    const second = await client.listPets(first.next)
    assert.deepEqual(second.pets, created.slice(2))
    assert.equal(second.next, undefined)
  })

  test('when listAllPets walks 45 pets 10 at a time, then it sees each once in ascending id order over 5 pages', async (t) => {
    const { client, seen } = await clientOnServer(t)
    const created = await Promise.all(
      Array.from({ length: 45 }, (_, i) => client.createPet({ name: `Pet ${i}`, categoryId: BigInt(i) })),
    )
    const ids = created.map((pet) => pet.id).sort((a, b) => (a < b ? -1 : 1))
    seen.length = 0
    const walked = await collect(client.listAllPets({ limit: 10 }))
    assert.deepEqual(
      walked.map((pet) => pet.id),
      ids,
    )
    assert.equal(seen.length, 5)
    assert.ok(seen.slice(1).every((request) => new URL(request.url).searchParams.has('cursor')))
  })

  test('when pets are listed by status, then only pets with that status come, on every page', async (t) => {
    const { client } = await clientOnServer(t)
    const statuses = ['sold', 'available', 'sold', 'pending', 'sold', undefined, 'sold'] as const
    const created: Pet[] = []
    for (const status of statuses)
      created.push(await client.createPet({ name: 'Cat', categoryId: 3n, status }))
    const sold = await collect(client.listAllPets({ status: 'sold', limit: 2 }))
    assert.deepEqual(
      sold,
      created.filter((pet) => pet.status === 'sold'),
    )
    assert.deepEqual((await client.listPets({ status: 'pending' })).pets, [created[3]])
  })

  test('when the signal aborts between two pets of a page, then listAllPets hands out no more of it', async (t) => {
    const { client } = await clientOnServer(t)
    for (let i = 0; i < 15; i++) await client.createPet({ name: `Pet ${i}`, categoryId: 1n })
    const controller = new AbortController()
    const handed: Pet[] = []
    const walking = (async () => {
      for await (const pet of client.listAllPets({ limit: 5 }, { signal: controller.signal })) {
        handed.push(pet)
        if (handed.length === 7) controller.abort()
      }
    })()
    await assert.rejects(walking, { name: 'AbortError' })
    assert.equal(handed.length, 7, 'the second page stopped at the pet the abort came after')
  })

  test('when a next link leads back to a page already listed, then listAllPets stops with unexpected_response', async (t) => {
    const server = await startTestServer(t)
    const seed = createClient({ baseUrl: `${server.origin}/v1`, apiKey: server.key })
    for (let i = 0; i < 6; i++) await seed.createPet({ name: `Pet ${i}`, categoryId: 1n })
    // As a cache in between might: the first page's answer is kept and given again for every page after.
    let kept: Response | undefined
    const client = createClient({
      baseUrl: `${server.origin}/v1`,
      apiKey: server.key,
      fetch: async (url, init) => {
        if (new URL(url).searchParams.has('cursor') && kept !== undefined) {
          await (await fetch(url, init)).arrayBuffer()
          return kept.clone()
        }
        const answer = await fetch(url, init)
        if (kept === undefined) kept = answer.clone()
        return answer
      },
    })
    const handed: Pet[] = []
    const error = await rejection(
      (async () => {
        for await (const pet of client.listAllPets({ limit: 2 })) {
          handed.push(pet)
          if (handed.length > 20) assert.fail('the walk went on over the same page')
        }
      })(),
    )
    assert.equal(error.code, 'unexpected_response')
    assert.match(error.message, /pets already listed/)
    // The first page only: the same page again is refused before any of its pets is handed out twice.
    assert.equal(handed.length, 2)
  })

  test('when a page with new pets links back to itself, then listAllPets hands out its pets once and stops with unexpected_response', async (t) => {
    // The second page's next link names the second page again, as a faulty proxy rewriting links might.
    const client = await clientWithLinksRewritten(t, (link, url) => {
      const cursor = new URL(url).searchParams.get('cursor')
      return cursor === null ? link : link.replace(/cursor=[^&>]+/, `cursor=${encodeURIComponent(cursor)}`)
    })
    const handed: bigint[] = []
    const error = await rejection(
      (async () => {
        for await (const pet of client.listAllPets({ limit: 2 })) {
          handed.push(pet.id)
          if (handed.length > 20) assert.fail('the walk went on over the same page')
        }
      })(),
    )
    assert.equal(error.code, 'unexpected_response')
    assert.deepEqual(handed, [1n, 2n, 3n, 4n], 'the page that linked back was handed out, once')
  })

  test('when a proxy writes the next link in other letters (REL="Next"), beside another link, then listAllPets still follows it', async (t) => {
    // Relation types and parameter names are compared without regard to case (RFC 8288 §2.1.1, §3).
    const client = await clientWithLinksRewritten(
      t,
      (link) => `</v1/pets>; rel="collection", ${link.replace('rel="next"', 'REL="Next"')}`,
    )
    const handed: bigint[] = []
    for await (const pet of client.listAllPets({ limit: 2 })) handed.push(pet.id)
    assert.deepEqual(handed, [1n, 2n, 3n, 4n, 5n, 6n])
  })
})
