import { parentPort, workerData } from 'node:worker_threads'
import { SqliteConnection, type SqliteConnectionOptions } from './sqlite-connection.ts'
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
const db = new SqliteConnection(workerData as SqliteConnectionOptions)

port.on('message', async (message: WriteThreadMessage) => {
  if ('close' in message) {
    db.close()
    port.close()
    return
  }
  // Taken while a batch waits for the lock: its wait retries asynchronously, so this message comes between.
  if ('endWaitsIn' in message) return db.endWaitsBy(performance.now() + message.endWaitsIn)
  let reply: WriteThreadReply
  try {
    reply = batchToWire(await db.run(() => createPetBatch(db, message.requests), message.waitMs))
  } catch (error) {
    reply = { failure: failureToWire(error) }
  }
  port.postMessage(reply)
})
