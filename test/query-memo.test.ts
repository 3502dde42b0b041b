import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { isSharedQuery, MALFORMED_QUERY, parseQuery, QUERY_MEMO } from '../src/http/query-memo.ts'

describe('query memo', () => {
  test('when a query string comes again, then it gets the same frozen parsed form', () => {
    const first = parseQuery('status=available&limit=20')
    assert.deepEqual({ ...first }, { status: 'available', limit: '20' })
    assert.equal(parseQuery('status=available&limit=20'), first)
    assert.ok(Object.isFrozen(first) && isSharedQuery(first))
    assert.equal('toString' in first, false)
    assert.equal(parseQuery(''), parseQuery(''))
  })

  test('when fresh query strings of one length alternate, then each gets its own shared parsed form', () => {
    // Made at run time, as a request's are; the same length, so only their characters tell them apart.
    const made = (status: string) => ['limit=7', `status=${status}`].join('&')
    const sold = parseQuery(made('sold'))
    const again = parseQuery(made('sold'))
    assert.equal(again, sold)
    assert.ok(Object.isFrozen(again) && isSharedQuery(again))
    assert.deepEqual({ ...parseQuery(made('lost')) }, { limit: '7', status: 'lost' })
    assert.deepEqual({ ...parseQuery(made('lost')) }, { limit: '7', status: 'lost' })
    assert.deepEqual({ ...parseQuery(made('sold')) }, { limit: '7', status: 'sold' })
    assert.equal(parseQuery(made('sold')), sold)
    assert.equal(parseQuery('limit=%zz'), MALFORMED_QUERY)
    assert.equal(parseQuery('limit=%zz'), MALFORMED_QUERY)
    assert.equal(parseQuery(made('sold')), sold)
  })

  test('when a parameter is given twice, then it still parses to both values', () => {
    assert.deepEqual({ ...parseQuery('limit=1&limit=2') }, { limit: ['1', '2'] })
  })

  test('when a query string is longer than the memo keeps, then it is parsed each time and not shared', () => {
    const long = `cursor=${'a'.repeat(QUERY_MEMO.maxLength)}`
    const parsed = parseQuery(long)
    assert.equal(parsed.cursor, 'a'.repeat(QUERY_MEMO.maxLength))
    assert.notEqual(parseQuery(long), parsed)
    assert.equal(isSharedQuery(parsed), false)
  })

  test('when a query holds a parameter twice or more parameters than any operation takes, then it is not kept', () => {
    const repeated = parseQuery('limit=1&limit=2')
    assert.notEqual(parseQuery('limit=1&limit=2'), repeated)
    assert.equal(isSharedQuery(repeated), false)
    const many = 'a=1&b=2&c=3&d=4&e=5'
    assert.deepEqual({ ...parseQuery(many) }, { a: '1', b: '2', c: '3', d: '4', e: '5' })
    assert.equal(isSharedQuery(parseQuery(many)), false)
    assert.ok(isSharedQuery(parseQuery('a=1&b=2&c=3&d=4')))
  })

  test('when more distinct query strings come than the memo keeps, then the least recent leave it', () => {
    const oldest = parseQuery('limit=1&status=pending')
    for (let i = 0; i < QUERY_MEMO.maxEntries; i++) parseQuery(`cursor=c${i}`)
    const again = parseQuery('limit=1&status=pending')
    assert.notEqual(again, oldest)
    assert.deepEqual({ ...again }, { ...oldest })
  })
})
