import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { watchCopies } from '../src/pets/copy-watch.ts'
import { ReadCache } from '../src/pets/read-cache.ts'
import { representationOf } from '../src/pets/representation.ts'

// Each entry is charged its body plus 200 bytes, so a 100-byte body costs 300.
const answer = (text: string) => representationOf(text.padEnd(100, '.'))

describe('read cache', () => {
  test('when more answers are kept than the byte budget holds, then the least recently read are dropped', () => {
    const cache = new ReadCache(900)
    cache.set('a', answer('a'))
    cache.set('b', answer('b'))
    cache.set('c', answer('c'))
    assert.ok(cache.get('a'), 'read, so a is now the most recent')
    cache.set('d', answer('d'))
    assert.equal(cache.get('b'), undefined, 'b was the least recently used')
    assert.deepEqual(
      ['a', 'c', 'd'].map((key) => cache.get(key)?.body[0]),
      ['a', 'c', 'd'],
    )
  })

  test('when a key is kept again, then the first answer stays', () => {
    const cache = new ReadCache(900)
    cache.set('page', answer('first'))
    cache.set('page', answer('second'))
    assert.match(String(cache.get('page')?.body), /^first/)
  })

  test('when an answer is larger than the whole budget, then it is not kept and nothing is evicted for it', () => {
    const cache = new ReadCache(900)
    cache.set('small', answer('small'))
    cache.set('huge', representationOf('x'.repeat(1000)))
    assert.equal(cache.get('huge'), undefined)
    assert.ok(cache.get('small'))
  })

  test('when answers hold letters of several bytes (UTF-8 bodies of long pages included), then each is charged its bytes, not its characters', () => {
    // 100 characters of 3 bytes each: 300 bytes and 200 more, as a Buffer (a long page) or as a string.
    const cjk = '猫'.repeat(100)
    for (const body of [Buffer.from(cjk), cjk]) {
      const cache = new ReadCache(999)
      cache.set('a', representationOf(cjk))
      cache.set('b', { ...representationOf(cjk), body })
      assert.equal(cache.get('a'), undefined, `two entries of 500 bytes are over 999 (${typeof body})`)
      assert.ok(cache.get('b'))
    }
  })

  test('when the budget is 0, then nothing is kept', () => {
    const cache = new ReadCache(0)
    cache.set('a', answer('a'))
    assert.equal(cache.get('a'), undefined)
  })
})

describe('read cache under a copy', () => {
  /** A store whose copy marks are what `marks` holds when read. */
  const markedStore = (marks: { unfinishedSince?: string; lastFinishedAt?: string }) => ({
    copyMarks: async () => ({ unfinishedSince: marks.unfinishedSince, lastFinishedAt: marks.lastFinishedAt }),
  })

  test('when a copy begins, runs and ends between checks, then every answer kept is let go, no page is kept while it runs, and pages are kept again once it ended', async () => {
    const cache = new ReadCache(9000)
    const marks: { unfinishedSince?: string; lastFinishedAt?: string } = {}
    const check = await watchCopies(markedStore(marks), cache)
    cache.setPage('page', answer('before'), cache.generation)
    cache.set('pet', answer('pet'))
    await check()
    assert.ok(cache.get('page') && cache.get('pet'), 'no copy: nothing let go')

    marks.unfinishedSince = '2026-12-02T05:00:00.000Z'
    await check()
    assert.equal(cache.get('page'), undefined, 'a page kept before the copy may lack its pets')
    assert.equal(cache.get('pet'), undefined)
    cache.setPage('during', answer('during'), cache.generation)
    assert.equal(cache.get('during'), undefined, 'no page kept while a copy is under way')
    cache.set('pet', answer('pet'))
    assert.ok(cache.get('pet'), 'a pet is the same whatever a copy adds')

    marks.unfinishedSince = undefined
    marks.lastFinishedAt = '2026-12-02T05:00:01.000Z'
    await check()
    assert.equal(cache.get('pet'), undefined, 'let go again as the copy ends')
    cache.setPage('after', answer('after'), cache.generation)
    assert.ok(cache.get('after'), 'pages kept again')
  })

  test('when a page read from the store before a copy was seen is kept after it, then it is not kept', async () => {
    const cache = new ReadCache(9000)
    const marks: { unfinishedSince?: string; lastFinishedAt?: string } = {}
    const check = await watchCopies(markedStore(marks), cache)
    const readIn = cache.generation
    // A copy began and ended while the page was being read.
    marks.lastFinishedAt = '2026-12-02T05:00:01.000Z'
    await check()
    cache.setPage('late', answer('late'), readIn)
    assert.equal(cache.get('late'), undefined)
  })

  test('when the service starts on an unfinished copy, then it keeps no page until the copy ends', async () => {
    const cache = new ReadCache(9000)
    const marks: { unfinishedSince?: string; lastFinishedAt?: string } = {
      unfinishedSince: '2026-12-02T04:00:00.000Z',
    }
    const check = await watchCopies(markedStore(marks), cache)
    cache.setPage('page', answer('page'), cache.generation)
    assert.equal(cache.get('page'), undefined)
    marks.unfinishedSince = undefined
    marks.lastFinishedAt = '2026-12-02T05:00:00.000Z'
    await check()
    cache.setPage('page', answer('page'), cache.generation)
    assert.ok(cache.get('page'))
  })
})
