import { workerData } from 'node:worker_threads'

// The real write thread, given a database path that no file can be opened at (its directory is a
// regular file, ENOTDIR): a thread that starts, but whose connection fails at every batch.
Object.assign(workerData as { path: string }, { path: `${(workerData as { path: string }).path}/pets.db` })
await import('../../src/store/sqlite/sqlite-write-thread-main.ts')
