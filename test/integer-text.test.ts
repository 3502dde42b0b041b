import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import { integerText } from '../src/http/integer-text.ts'

describe('an integer written as text', () => {
  test('when it is a non-negative safe integer, then its text is what String() writes', () => {
    for (const n of [0, 1, 9, 10, 99, 100, 999, 1000, 1001, 1010, 10_000, 999_999, 1_000_000, 1_000_001]) {
      assert.equal(integerText(n), String(n))
    }
    assert.equal(integerText(Number.MAX_SAFE_INTEGER), String(Number.MAX_SAFE_INTEGER))
    fc.assert(
      fc.property(fc.maxSafeNat(), (n) => integerText(n) === String(n)),
      { numRuns: 10_000 },
    )
  })

  test('when it is anything else, then its text is still what String() writes', () => {
    for (const n of [-1, -1000, 0.5, 1.5e3 + 0.25, 2 ** 53, 1e21, Number.NaN, Number.POSITIVE_INFINITY, -0]) {
      assert.equal(integerText(n), String(n))
    }
  })
})
