import assert from 'node:assert/strict'
import { copyFileSync } from 'node:fs'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { test } from 'node:test'
import { Worker } from 'node:worker_threads'
import { openDurable } from '../src/store/sqlite/sqlite-open.ts'
import { temporaryDirectory } from './helpers/cleanup.ts'

// What a restore's rename does to a start that opens the database at that moment, made to happen often:
// another thread puts a new file at the database's path, over and over, as the open goes on.
const REPLACING = `
const { copyFileSync, renameSync } = require('node:fs')
const { workerData } = require('node:worker_threads')
const stop = new Int32Array(workerData.stop)
while (Atomics.load(stop, 0) === 0) {
  copyFileSync(workerData.backup, workerData.next)
  renameSync(workerData.next, workerData.path)
}
`

test('when the database file is replaced at its path while a start opens it (a restore putting its backup in place), then the open is refused saying so and to start again, not as a read-only database', async (t) => {
  const directory = temporaryDirectory(t)
  const path = join(directory, 'petstore.db')
  const backup = join(directory, 'backup.db')
  // A database with nothing in it yet but its header: what the open finds at the path either way.
  const made = new DatabaseSync(backup)
  made.exec('PRAGMA user_version = 1')
  made.close()
  copyFileSync(backup, path)
  const stop = new Int32Array(new SharedArrayBuffer(4))
  const worker = new Worker(REPLACING, {
    eval: true,
    workerData: { stop: stop.buffer, backup, next: join(directory, 'next.db'), path },
  })
  // Stopped before the directory's own cleanup, which would find the thread's next file being made.
  const refusals = new Set<string>()
  try {
    const until = performance.now() + 20_000
    while (performance.now() < until && ![...refusals].some((message) => /attempt to write/.test(message))) {
      try {
        openDurable(path).close()
      } catch (error) {
        refusals.add((error as Error).message.replaceAll(path, 'P'))
      }
    }
  } finally {
    Atomics.store(stop, 0, 1)
    await worker.terminate()
  }
  const moved = [...refusals].find((message) => /attempt to write/.test(message))
  assert.ok(moved, `SQLite never met the file replaced in 20 s; refusals: ${[...refusals].join('; ')}`)
  assert.equal(
    moved,
    'cannot open the database P: attempt to write a readonly database (the file was replaced at its path ' +
      'while it was being opened, as a restore does when it puts its backup in place): start again',
  )
})
