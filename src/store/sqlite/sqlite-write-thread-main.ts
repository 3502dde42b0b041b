import { parentPort, workerData } from 'node:worker_threads'
import { StoreUnavailableError } from '../../errors.ts'
import { SqliteConnection, type SqliteConnectionOptions } from './sqlite-connection.ts'
import { storageFaultOf } from './sqlite-errors.ts'
import { createPetBatch } from './sqlite-pet-inserts.ts'
import {
  batchToWire,
  failureToWire,
  type WriteThreadMessage,
  type WriteThreadReply,
} from './sqlite-write-thread.ts'

// The write thread's entry point (see SqliteWriteThread): one connection, one batch at a time.
const port = parentPort
if (port === null) throw new Error('sqlite-write-thread-main.ts runs as a worker thread only')
let db: SqliteConnection | undefined

/** A wall-clock time sent by the main thread, on this thread's clock (its origin is its own). */
const here = (wallClockMs: number) => wallClockMs - performance.timeOrigin

/**
 * The connection, opened with the first batch and again with the next if that failed (no descriptor left,
 * say): a failed open answers its batch as not written, where a thread dying of it would leave it in doubt.
 */
function connection(): SqliteConnection {
  try {
    db ??= new SqliteConnection(workerData as SqliteConnectionOptions)
    return db
  } catch (error) {
    if (storageFaultOf(error) !== undefined) throw error
    const reason = error instanceof Error ? error.message : String(error)
    throw new StoreUnavailableError(`the write thread could not open the database: ${reason}`, {
      cause: error,
    })
  }
}

port.on('message', async (message: WriteThreadMessage) => {
  if ('close' in message) {
    db?.close()
    port.close()
    return
  }
  // Taken while a batch waits for the lock: its wait retries asynchronously, so this message comes between.
  if ('endWaitsAt' in message) return db?.endWaitsBy(here(message.endWaitsAt))
  let reply: WriteThreadReply
  try {
    const open = connection()
    const waitMs = here(message.waitUntil) - performance.now()
    reply = batchToWire(await open.run(() => createPetBatch(open, message.requests), waitMs))
  } catch (error) {
    reply = { failure: failureToWire(error) }
  }
  port.postMessage(reply)
})
