import { execFileSync } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import type { TestContext } from 'node:test'
import { generateApiKey } from '../../src/auth/api-key.ts'
import { openFileLimit } from '../../src/cli/open-file-limit.ts'
import { temporaryDirectory } from './cleanup.ts'
import { exitWithin, type ServeProcess, startServeProcess } from './cli-process.ts'
import { petLedger } from './pet-ledger.ts'

export const MIB = 1024 * 1024
// A full disk refuses a create only once SQLite needs a new block: the log may have room for a few more.
export const MAX_CREATES_UNTIL_FULL = 200

/** Serve processes on a database in `directory` (killed after the test), and a ledger of their pets. */
export function setUp(t: TestContext, directory: string, writeThread = 'off') {
  const cwd = temporaryDirectory(t)
  const key = generateApiKey()
  const env = {
    API_KEYS: `faults:${key}`,
    RATE_LIMIT_PER_MINUTE: '0',
    DATABASE_URL: `sqlite:${join(directory, 'petstore.db')}`,
    SQLITE_WRITE_THREAD: writeThread,
  }
  const servers: ServeProcess[] = []
  t.after(() => {
    for (const server of servers) server.child.kill('SIGKILL')
  })
  return {
    key,
    ledger: petLedger(key),
    async start(): Promise<ServeProcess> {
      const server = await startServeProcess(env, cwd)
      servers.push(server)
      return server
    },
    async kill(server: ServeProcess): Promise<void> {
      server.child.kill('SIGKILL')
      await exitWithin(server)
    },
  }
}

/** Sets the soft limit on the size of files `server` writes (EFBIG past it), as `ulimit -f` would. */
export function limitFileSize(server: ServeProcess, bytes: number | 'unlimited') {
  execFileSync('prlimit', ['--pid', String(server.child.pid), `--fsize=${bytes}:`])
}

/**
 * Sets `server`'s soft limit on open files to the lowest descriptor it has free, so that nothing it opens
 * next gets one (EMFILE), as when its connections have used them all; returns what puts the limit back.
 */
export function exhaustFileDescriptors(server: ServeProcess): () => void {
  const pid = String(server.child.pid)
  const soft = openFileLimit(Number(pid))
  if (soft === undefined) throw new Error(`no open-file limit in /proc/${pid}/limits`)
  const used = new Set(readdirSync(`/proc/${pid}/fd`).map(Number))
  let free = 0
  while (used.has(free)) free++
  execFileSync('prlimit', ['--pid', pid, `--nofile=${free}:`])
  return () => execFileSync('prlimit', ['--pid', pid, `--nofile=${soft}:`])
}
