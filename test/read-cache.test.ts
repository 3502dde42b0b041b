import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
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

  test('when the budget is 0, then nothing is kept', () => {
    const cache = new ReadCache(0)
    cache.set('a', answer('a'))
    assert.equal(cache.get('a'), undefined)
  })
})
