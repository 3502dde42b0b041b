import { parentPort } from 'node:worker_threads'
import type { WriteThreadMessage } from '../../src/store/sqlite/sqlite-write-thread.ts'

// The real write thread, except that a batch holding a pet named "crash" ends the thread before the real
// handler (registered after this one) sees it, one named "throw" throws here (an uncaught exception: the
// worker's 'error', then its 'exit'; the real handler still runs, so it may be committed), and one named
// "crash after commit" ends it once the batch is committed, before its answer is sent: a thread dying in
// the middle of a batch.
const port = parentPort
let crashAfterCommit = false
port?.on('message', (message: WriteThreadMessage) => {
  if (!('requests' in message)) return
  if (message.requests.some(({ pet }) => pet.name === 'crash')) process.exit(70)
  if (message.requests.some(({ pet }) => pet.name === 'throw')) throw new Error('thrown in the write thread')
  crashAfterCommit = message.requests.some(({ pet }) => pet.name === 'crash after commit')
})
if (port) {
  const post = port.postMessage.bind(port)
  port.postMessage = (reply: unknown) => (crashAfterCommit ? process.exit(71) : post(reply))
}
await import('../../src/store/sqlite/sqlite-write-thread-main.ts')
