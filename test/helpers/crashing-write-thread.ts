import { parentPort } from 'node:worker_threads'
import type { WriteThreadMessage } from '../../src/store/sqlite/sqlite-write-thread.ts'

// The real write thread, except that a batch holding a pet named "crash" ends the thread before the
// real handler (registered after this one) sees it: a thread dying in the middle of a batch.
parentPort?.on('message', (message: WriteThreadMessage) => {
  if ('requests' in message && message.requests.some(({ pet }) => pet.name === 'crash')) process.exit(70)
})
await import('../../src/store/sqlite/sqlite-write-thread-main.ts')
