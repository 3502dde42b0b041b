import assert from 'node:assert/strict'
import { resolve } from 'node:path'
import { describe, test } from 'node:test'
import { parseOptions } from '../bench/options.ts'
import { turnsOf } from '../bench/turns.ts'
import { UsageError } from '../src/cli/command.ts'

// The bench's command line: how long a target's turn is (`--slice`).

const sliceOf = (args: string[]) => parseOptions(args)?.sliceS

describe('the bench’s --slice', () => {
  test('when it is not given, then the targets take turns of about a second', () => {
    assert.equal(sliceOf([]), 1)
    assert.deepEqual(turnsOf(5, 1), { count: 6, seconds: 5 / 6 })
  })

  test('when it is a fraction of a second, then the turns are about that long', () => {
    assert.equal(sliceOf(['--slice', '0.5']), 0.5)
    assert.equal(sliceOf(['--slice', '0.25']), 0.25)
    assert.deepEqual(turnsOf(5, 0.5), { count: 10, seconds: 0.5 })
    assert.deepEqual(turnsOf(5, 0.25), { count: 20, seconds: 0.25 })
    // An even number of turns that adds up to the duration: 16 of 0.3125 s, not 0.3.
    assert.equal(sliceOf(['--slice', '0.3']), 0.3)
    assert.deepEqual(turnsOf(5, 0.3), { count: 16, seconds: 0.3125 })
  })

  test('when it is seconds and hundredths, then it is taken as written', () => {
    assert.equal(sliceOf(['--slice', '2.5']), 2.5)
    assert.equal(sliceOf(['--slice', '1.75']), 1.75)
  })

  test('when it is whole seconds up to an hour, then they are taken', () => {
    assert.equal(sliceOf(['--slice', '5']), 5)
    assert.equal(sliceOf(['--slice', '3600']), 3600)
  })

  for (const raw of ['0', '0.2', '0.05', '3600.01', '1e3', '.5', '1.', '1.234', '-1', 'one', '']) {
    test(`when it is "${raw}", then a usage error names what it takes`, () => {
      assert.throws(
        () => parseOptions([`--slice=${raw}`]),
        (error: unknown) =>
          error instanceof UsageError &&
          error.message === `--slice must be seconds from 0.25 to 3600, to the hundredth (got "${raw}")`,
      )
    })
  }
})

describe('the bench’s --fixed-rate', () => {
  const shareOf = (args: string[]) => parseOptions(args)?.fixedRateShare

  test("when it is not given, then read scenarios are also measured at half the slowest target's req/s", () => {
    assert.equal(shareOf([]), 0.5)
  })

  test('when it is a share to the hundredth, then it is taken; when it is 0, then nothing is measured at a fixed rate', () => {
    assert.equal(shareOf(['--fixed-rate', '0.25']), 0.25)
    assert.equal(shareOf(['--fixed-rate', '0.95']), 0.95)
    assert.equal(shareOf(['--fixed-rate', '0']), 0)
  })

  for (const raw of ['1', '0.96', '0.04', '0.123', '-0.5', 'half', '']) {
    test(`when it is "${raw}", then a usage error names what it takes`, () => {
      assert.throws(
        () => parseOptions([`--fixed-rate=${raw}`]),
        (error: unknown) =>
          error instanceof UsageError &&
          error.message ===
            `--fixed-rate must be a share from 0.05 to 0.95, to the hundredth, or 0 (got "${raw}")`,
      )
    })
  }
})

describe('the bench’s --heap-watch', () => {
  const heapWatchOf = (args: string[]) => parseOptions(args)?.heapWatch

  test('when it is not given, then no heap is ever captured', () => {
    assert.equal(heapWatchOf([]), undefined)
  })

  test('when it names a directory, then it is taken from where the bench was started, made absolute', () => {
    assert.equal(heapWatchOf(['--heap-watch', 'scratch/heaps']), resolve('scratch/heaps'))
    assert.equal(heapWatchOf(['--heap-watch=/tmp/heaps']), '/tmp/heaps')
  })

  test('when it is empty, then a usage error says it must name a directory', () => {
    assert.throws(
      () => parseOptions(['--heap-watch=']),
      (error: unknown) =>
        error instanceof UsageError && error.message === '--heap-watch must name a directory',
    )
  })
})
