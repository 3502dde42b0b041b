import assert from 'node:assert/strict'
import type { TestContext } from 'node:test'
import { storedFormOf } from '../../src/auth/api-key.ts'
import { openCopySource } from '../../src/cli/open-store.ts'
import { INT64_MAX, INT64_MIN } from '../../src/schemas/int64.ts'
import type { PetStatus } from '../../src/schemas/pet.ts'
import type { Store } from '../../src/store/store.ts'
import { type ServeProcess, serveForTest } from './cli-process.ts'

const STATUSES: Array<PetStatus | undefined> = ['available', 'pending', 'sold', undefined]
// Exactness at the edges: values a double would round, and the int64 extremes.
const CATEGORIES = [1n, 9007199254740993n, INT64_MAX, INT64_MIN, -9007199254740993n]

/** `petstore serve` on `env`'s store, without a rate limit, killed after the test if still running. */
export function serve(t: TestContext, env: Record<string, string>, cwd: string): Promise<ServeProcess> {
  return serveForTest(t, { RATE_LIMIT_PER_MINUTE: '0', ...env }, cwd)
}

/** A call with `key` and a JSON body's type; its answer is the test's to check. */
export function call(server: ServeProcess, key: string, path: string, init: RequestInit = {}) {
  return fetch(new URL(path, server.origin), {
    ...init,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...init.headers },
  })
}

/** Every listPets page of a walk, as the bytes of its body and its next link. */
export async function walk(server: ServeProcess, key: string, start: string): Promise<string[]> {
  const pages: string[] = []
  let path: string | undefined = start
  while (path !== undefined) {
    assert.ok(pages.length < 1000, 'the walk ends within 1000 pages')
    const response = await call(server, key, path)
    assert.equal(response.status, 200, path)
    const link = response.headers.get('link') ?? ''
    pages.push(`${link}\n${await response.text()}`)
    const next = /<([^>]+)>; rel="next"/.exec(link)?.[1]
    path =
      next === undefined
        ? undefined
        : new URL(next, server.origin).pathname + new URL(next, server.origin).search
  }
  return pages
}

/** A store as a deployment leaves it: `pets` pets, an old key, a revoked key, deprecated-call counts. */
export async function seedStore(
  store: Store,
  pets: number,
  { oldKey, revokedKey }: { oldKey: string; revokedKey: string },
): Promise<void> {
  try {
    await store.migrate()
    // As every start and command that opens a store makes it (a copy recognises its earlier run by it).
    await store.serviceSecret()
    const old = await store.createApiKey(storedFormOf('old', oldKey))
    await store.createApiKey(storedFormOf('gone', revokedKey))
    await store.revokeApiKey('gone')
    await store.recordDeprecatedCalls([
      { apiKeyId: old.id, calls: 7, lastCallAtMs: Date.parse('2026-03-01T10:00:00Z') },
    ])
    for (let start = 0; start < pets; start += 1000) {
      await Promise.all(
        Array.from({ length: Math.min(1000, pets - start) }, (_, i) => {
          const n = start + i
          const status = STATUSES[n % STATUSES.length]
          const categoryId = CATEGORIES[n % CATEGORIES.length] as bigint
          return store.createPet({ pet: { name: `pet ${n} ✓`, categoryId, ...(status ? { status } : {}) } })
        }),
      )
    }
  } finally {
    await store.close()
  }
}

/**
 * Everything a copy must carry, read straight from a store (`sqlite:PATH` or a postgres:// URL): every pet,
 * key (with its hash) and Idempotency-Key record, the cursor secret and the highest id given out.
 */
export async function storeContents(url: string) {
  const store = await openCopySource(url)
  // node:sqlite's rows have no prototype, pg's do: plain objects compare across engines.
  const plain = <T extends object>(rows: T[]): T[] => rows.map((row) => ({ ...row }))
  try {
    return {
      secret: await store.secret(),
      keys: plain(await store.keys()),
      pets: plain(await store.pets(INT64_MIN, 10_000_000)),
      idempotencyRecords: plain(await store.idempotencyRecords(undefined, 10_000_000)),
      highestPetId: await store.highestPetId(),
    }
  } finally {
    await store.close()
  }
}
