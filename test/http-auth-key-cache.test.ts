import assert from 'node:assert/strict'
import { describe, type TestContext, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { generateApiKey, storedFormOf } from '../src/auth/api-key.ts'
import { createAuthenticator } from '../src/auth/authenticator.ts'
import { sqliteEngine } from './helpers/store-engines.ts'

/**
 * An authenticator on a new store holding one key named `name`, whose lookups are counted (and take
 * `delayMs`, as a database's do).
 */
async function countedAuthenticator(t: TestContext, name: string, delayMs = 0) {
  const { store } = await sqliteEngine.open(t)
  const key = generateApiKey()
  await store.createApiKey(storedFormOf(name, key))
  const counts = { lookups: 0, hashes: 0, running: 0, mostRunning: 0 }
  const counted = {
    findActiveApiKeys: async (hashes: readonly string[]) => {
      counts.lookups++
      counts.hashes += hashes.length
      counts.mostRunning = Math.max(counts.mostRunning, ++counts.running)
      try {
        if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs))
        return await store.findActiveApiKeys(hashes)
      } finally {
        counts.running--
      }
    },
  }
  const authenticate = createAuthenticator({ store: counted, cacheTtlMs: 60_000, cacheMaxEntries: 4 })
  return { authenticate, key, counts }
}

describe('the key cache', () => {
  test('when many unknown keys are presented (random keys, a scan), then a known key stays cached: they do not push it out', async (t) => {
    const { authenticate, key: known, counts } = await countedAuthenticator(t, 'known')
    assert.deepEqual(await authenticate(known), { id: 1n, name: 'known' })
    for (let i = 0; i < 20; i++) assert.equal(await authenticate(generateApiKey()), undefined)
    const before = counts.lookups
    assert.deepEqual(await authenticate(known), { id: 1n, name: 'known' })
    assert.equal(counts.lookups, before, 'the known key was looked up again')
    // Unknown keys are still cached, within their own bound: the last one asked again costs no lookup.
    const unknown = generateApiKey()
    await authenticate(unknown)
    const afterUnknown = counts.lookups
    assert.equal(await authenticate(unknown), undefined)
    assert.equal(counts.lookups, afterUnknown)
  })

  test('when many unknown keys come at once (a flood of random keys), then the store is asked one query at a time, each for all the keys that came while the last ran, not once per key: the flood holds one database connection, not the pool', async (t) => {
    const { authenticate, key, counts } = await countedAuthenticator(t, 'known', 20)
    const flood = Array.from({ length: 50 }, () => authenticate(generateApiKey()))
    const known = authenticate(key)
    assert.ok((await Promise.all(flood)).every((identity) => identity === undefined))
    assert.deepEqual(await known, { id: 1n, name: 'known' })
    assert.deepEqual([counts.hashes, counts.mostRunning], [51, 1])
    assert.ok(counts.lookups <= 2, `${counts.lookups} lookups for 51 keys`)
  })

  test('when a key lookup fails (the database down), then the keys waiting behind it fail with it at once, not one query after another', async () => {
    let lookups = 0
    const down = new Error('the database is down')
    const authenticate = createAuthenticator({
      store: {
        findActiveApiKeys: async () => {
          lookups++
          await sleep(20)
          throw down
        },
      },
      cacheTtlMs: 60_000,
      cacheMaxEntries: 4,
    })
    const outcomes = await Promise.allSettled(Array.from({ length: 5 }, () => authenticate(generateApiKey())))
    assert.deepEqual(
      outcomes.map((outcome) => (outcome.status === 'rejected' ? outcome.reason : outcome.value)),
      Array(5).fill(down),
    )
    assert.equal(lookups, 1)
  })

  test('when unknown keys come faster than lookups answer them (a flood against a slow database), then those that waited past the bound for their turn fail as the store unavailable, and the queue does not grow without end', async () => {
    let lookups = 0
    const authenticate = createAuthenticator({
      store: {
        findActiveApiKeys: async (hashes: readonly string[]) => {
          lookups++
          await sleep(100)
          return hashes.map(() => undefined)
        },
      },
      cacheTtlMs: 60_000,
      cacheMaxEntries: 4,
      lookupQueueMs: 150,
    })
    // One lookup under way, then keys that wait behind it and the next one (1 per 256 keys) for 200 ms.
    const first = authenticate(generateApiKey())
    const queued = Array.from({ length: 600 }, () => authenticate(generateApiKey()))
    const outcomes = await Promise.allSettled([first, ...queued])
    const refused = outcomes.filter((outcome) => outcome.status === 'rejected')
    assert.ok(refused.length > 0, 'none waited too long')
    for (const { reason } of refused as PromiseRejectedResult[]) {
      assert.equal(reason.name, 'StoreUnavailableError')
      assert.match(reason.message, /waited more than 150 ms/)
    }
    assert.ok(lookups < 4, `${lookups} lookups`)
  })

  test('when many requests bring a key the cache does not hold (its entry expired) at once, then the store is asked once for all of them', async (t) => {
    const { authenticate, key, counts } = await countedAuthenticator(t, 'busy', 20)
    const identities = await Promise.all(Array.from({ length: 50 }, () => authenticate(key)))
    assert.ok(identities.every((identity) => identity?.name === 'busy'))
    assert.equal(counts.lookups, 1, 'each request asked the store')
    // An unknown key too, as a scan's repeats would.
    const unknown = generateApiKey()
    await Promise.all(Array.from({ length: 10 }, () => authenticate(unknown)))
    assert.equal(counts.lookups, 2)
  })
})
