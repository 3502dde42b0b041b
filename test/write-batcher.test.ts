import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises'
import { WriteBatcher } from '../src/store/shared/write-batcher.ts'
import { within } from './helpers/bounded-wait.ts'

// The gathering bound these tests give, and how long a write that must not wait for it may take on a busy
// machine (thousands of turns): a batch that waits for the bound fails its test after PROMPTLY.
const LONG_BOUND = 20_000
const PROMPTLY = 5000

/** A batcher whose commit records each batch and answers each item with its double. */
function recordingBatcher(maxBatch: number, maxGatherMs?: number) {
  const batches: number[][] = []
  const batcher = new WriteBatcher<number, number>(
    (items) => {
      batches.push([...items])
      return items.map((item) => item * 2)
    },
    maxBatch,
    { maxGatherMs },
  )
  return { batcher, batches }
}

describe('group commit (WriteBatcher)', () => {
  test('when writes arrive over several consecutive turns of the event loop, then they are committed in one batch', async () => {
    const { batcher, batches } = recordingBatcher(500, LONG_BOUND)
    const results: Array<Promise<number>> = []
    for (let item = 1; item <= 4; item++) {
      results.push(batcher.submit(item))
      await nextTurn()
    }
    const committed = within(Promise.all(results), PROMPTLY, 'the batch waited for the gathering bound')
    assert.deepEqual(await committed, [2, 4, 6, 8])
    assert.deepEqual(batches, [[1, 2, 3, 4]])
  })

  test('when a write comes alone, then it is committed after one quiet turn, not after the gathering bound', async () => {
    const { batcher, batches } = recordingBatcher(500, LONG_BOUND)
    const committed = within(batcher.submit(21), PROMPTLY, 'a lone write waited for the gathering bound')
    assert.equal(await committed, 42)
    assert.deepEqual(batches, [[21]])
  })

  test('when writes keep arriving at every turn, then a batch still starts within the gathering bound', async () => {
    // A batch size never reached: only the time bound can end the gathering.
    const { batcher, batches } = recordingBatcher(Number.MAX_SAFE_INTEGER, 5)
    const results: Array<Promise<number>> = []
    let producing = true
    let committedWhileProducing = false
    const stopAt = Date.now() + 200
    for (let item = 1; Date.now() < stopAt; item++) {
      results.push(batcher.submit(item))
      if (batches.length > 0 && producing) committedWhileProducing = true
      await nextTurn()
    }
    producing = false
    await within(Promise.all(results), PROMPTLY, 'the writes were not all committed')
    assert.ok(committedWhileProducing, 'no batch was committed while writes kept arriving')
    assert.equal(batches.flat().length, results.length)
  })

  test('when a batch is full, then it starts without gathering and the rest go in the next one', async () => {
    const { batcher, batches } = recordingBatcher(3, LONG_BOUND)
    const results = [1, 2, 3].map((item) => batcher.submit(item))
    await nextTurn()
    // Had the full batch kept gathering, these later writes would have joined the wait instead.
    const committedBeforeMore = batches.length
    results.push(batcher.submit(4))
    await nextTurn()
    results.push(batcher.submit(5))
    const committed = within(Promise.all(results), PROMPTLY, 'a batch waited for the gathering bound')
    assert.deepEqual(await committed, [2, 4, 6, 8, 10])
    assert.equal(committedBeforeMore, 1)
    assert.deepEqual(batches, [
      [1, 2, 3],
      [4, 5],
    ])
  })

  test('when flush is awaited, then every write submitted before it has been committed', async () => {
    // A commit that takes a while, as a sync does: a flush that did not wait for it would return first.
    let release = () => {}
    const committing = new Promise<void>((resolve) => {
      release = resolve
    })
    const committed: number[] = []
    const batcher = new WriteBatcher<number, number>(async (items) => {
      await committing
      committed.push(...items)
      return items
    }, 2)
    const results = [1, 2, 3].map((item) => batcher.submit(item))
    let flushed = false
    const flush = batcher.flush().then(() => {
      flushed = true
    })
    for (let turn = 0; turn < 10; turn++) await nextTurn()
    assert.equal(flushed, false, 'flush returned while a batch was still being committed')
    release()
    await within(flush, PROMPTLY, 'flush did not return once the writes were committed')
    assert.deepEqual(committed, [1, 2, 3], 'flush returned before every write was committed')
    assert.deepEqual(await Promise.all(results), [1, 2, 3])
  })

  test('when a batch fails, then only its own callers fail', async () => {
    let commits = 0
    const batcher = new WriteBatcher<number, number>((items) => {
      commits++
      if (commits === 1) throw new Error('disk full')
      return items
    }, 2)
    const [first, second, third] = [1, 2, 3].map((item) => batcher.submit(item))
    const failed = Promise.all(
      [first, second].map((write) => assert.rejects(write as Promise<number>, /disk full/)),
    )
    await within(failed, PROMPTLY, 'the writes of the failed batch were not failed')
    assert.equal(await within(third as Promise<number>, PROMPTLY, 'the next batch was not committed'), 3)
  })

  test('when a batch fails with an error said to split it, then each of its writes is committed alone, in order, and answered by its own', async () => {
    // Room for two writes: a batch of three fails whole, and alone the third fails.
    const tooMany = new Error('no room for that many')
    let room = 2
    const batches: number[][] = []
    const batcher = new WriteBatcher<number, number>(
      (items) => {
        batches.push(items)
        if (items.length > room) throw tooMany
        room -= items.length
        return items
      },
      10,
      { splitsOn: (error) => error === tooMany },
    )
    const results = await Promise.allSettled([1, 2, 3].map((item) => batcher.submit(item)))
    assert.deepEqual(batches, [[1, 2, 3], [1], [2], [3]])
    assert.deepEqual(
      results.map((result) => (result.status === 'fulfilled' ? result.value : result.reason)),
      [1, 2, tooMany],
    )
  })

  test('when a write committed alone after a split fails with an error said to fail the queue, then the rest of the split and the queue, never sent, fail at once with the failure given for them', async () => {
    const tooMany = new Error('no room for that many')
    const down = new Error('database unreachable')
    const behind = new Error('never sent: the write ahead failed')
    const batches: number[][] = []
    let release: () => void = () => {}
    const held = new Promise<void>((resolve) => {
      release = resolve
    })
    const batcher = new WriteBatcher<number, number>(
      async (items) => {
        batches.push(items)
        if (items.length > 1) {
          // Writes 4 and 5 arrive while the first batch is being committed.
          await held
          throw tooMany
        }
        if (items[0] === 1) return items
        throw down
      },
      3,
      {
        splitsOn: (error) => error === tooMany,
        failsQueued: (error) => error === down,
        queuedFailure: (error) => (error === down ? behind : error),
      },
    )
    const first = [1, 2, 3].map((item) => batcher.submit(item))
    await new Promise((resolve) => setImmediate(resolve))
    await new Promise((resolve) => setImmediate(resolve))
    const queued = [4, 5].map((item) => batcher.submit(item))
    release()
    const results = await Promise.allSettled([...first, ...queued])
    assert.deepEqual(batches, [[1, 2, 3], [1], [2]])
    assert.deepEqual(
      results.map((result) => (result.status === 'fulfilled' ? result.value : result.reason)),
      [1, down, behind, behind, behind],
    )
  })

  test('when a batch fails with an error said to fail the queue, then the writes queued behind it fail with it at once, and later ones get a new batch', async () => {
    const unavailable = new Error('database unreachable')
    const batches: number[][] = []
    let failFirst: (error: Error) => void = () => {}
    const batcher = new WriteBatcher<number, number>(
      (items) => {
        batches.push([...items])
        if (batches.length === 1) return new Promise((_, reject) => (failFirst = reject))
        return items
      },
      500,
      { failsQueued: (error) => error === unavailable },
    )
    const first = batcher.submit(1)
    await nextTurn()
    await nextTurn()
    // Queued while the first batch is in flight: never started, failed with it rather than tried again.
    const queued = [batcher.submit(2), batcher.submit(3)]
    failFirst(unavailable)
    await within(assert.rejects(first, unavailable), PROMPTLY, 'the failed batch was not failed')
    for (const write of queued)
      await within(assert.rejects(write, unavailable), PROMPTLY, 'a write queued behind it was not failed')
    assert.equal(await within(batcher.submit(4), PROMPTLY, 'a later write was not committed'), 4)
    assert.deepEqual(batches, [[1], [4]])
  })

  test('when writes wait behind a batch in flight, then their batch is told when the oldest of them was submitted', async () => {
    const told: number[] = []
    let finishFirst: () => void = () => {}
    const batcher = new WriteBatcher<number, number>((items, since) => {
      told.push(since)
      if (told.length === 1) return new Promise((resolve) => (finishFirst = () => resolve(items)))
      return items
    }, 500)
    const beforeFirst = performance.now()
    const first = batcher.submit(1)
    await nextTurn()
    await nextTurn()
    const beforeQueued = performance.now()
    const queued = batcher.submit(2)
    await sleep(50)
    finishFirst()
    await within(Promise.all([first, queued]), PROMPTLY, 'the writes were not committed')
    const [firstSince, queuedSince] = told as [number, number]
    assert.ok(firstSince >= beforeFirst && firstSince <= beforeQueued)
    // Its waiting behind the first batch counts: told the submit time, not the start of its own batch.
    assert.ok(queuedSince >= beforeQueued && queuedSince < beforeQueued + 40, `${queuedSince - beforeQueued}`)
  })
})
