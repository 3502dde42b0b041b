import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { chmodSync } from 'node:fs'
import { join } from 'node:path'
import type { TestContext } from 'node:test'
import { runCli } from './cli-process.ts'
import { readOnly, rowCount } from './sqlite-file.ts'
import { temporaryDirectory } from './test-server.ts'

export { serveForTest as serve } from './cli-process.ts'

export function integrityOf(path: string): unknown {
  return readOnly(path, (db) => db.prepare('PRAGMA integrity_check').get()?.integrity_check)
}

/** Root is needed to run a command as another user. */
export function rootLack() {
  return process.getuid?.() === 0 ? undefined : { missing: 'not root', remedy: 'run the tests as root' }
}

/** A directory (of `mode`) with a database of 3 pets and its backup `b.db`, which any user may read. */
export async function backedUpForAnotherUser(t: TestContext, mode: number): Promise<string> {
  const cwd = temporaryDirectory(t)
  chmodSync(cwd, mode)
  assert.equal((await runCli(['seed', '--count', '3'], {}, cwd)).status, 0)
  assert.equal((await runCli(['backup', '--to', 'b.db'], {}, cwd)).status, 0)
  chmodSync(join(cwd, 'b.db'), 0o644)
  return cwd
}

/** A process that commits `pets` pets into the database's write-ahead log, then is killed before any checkpoint. */
export function commitIntoLogThenDie(database: string, pets: number): void {
  const writer = spawnSync(process.execPath, [
    '-e',
    `const { DatabaseSync } = require('node:sqlite')
     const db = new DatabaseSync(${JSON.stringify(database)})
     db.exec('PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0')
     const insert = db.prepare("INSERT INTO pets (name, category_id) VALUES ('logged', 1)")
     db.exec('BEGIN'); for (let i = 0; i < ${pets}; i++) insert.run(); db.exec('COMMIT')
     process.kill(process.pid, 'SIGKILL')`,
  ])
  assert.equal(writer.signal, 'SIGKILL')
}

export function petCountOf(path: string): number {
  return rowCount(path, 'pets')
}
