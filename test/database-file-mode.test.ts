import assert from 'node:assert/strict'
import { chmodSync } from 'node:fs'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { runCli, serveForTest } from './helpers/cli-process.ts'
import { temporaryDirectory } from './helpers/test-server.ts'

/** The warn lines a start wrote, parsed. */
const warnings = (output: string) =>
  output
    .split('\n')
    .filter((line) => line.startsWith('{"level":40'))
    .map((line) => JSON.parse(line) as { msg: string; files?: string[]; mode?: string })

describe('the database file, readable by others', () => {
  test('when the SQLite database is readable by other users (a file made by 1.0.0, mode 0644), then the start says so at warn, naming the files and the chmod that mends it', async (t) => {
    const cwd = temporaryDirectory(t)
    assert.equal((await runCli(['seed', '--count', '1'], {}, cwd)).status, 0)
    const database = join(cwd, 'data', 'petstore.db')
    chmodSync(database, 0o644)
    const server = await serveForTest(t, {}, cwd)
    const said = warnings(server.output()).filter((line) => line.msg.includes('other users can read'))
    assert.equal(said.length, 1, server.output())
    assert.equal(said[0]?.mode, '0644')
    assert.deepEqual(said[0]?.files, [database])
    assert.match(said[0]?.msg ?? '', /chmod 600/)
  })

  test("when the database is its owner's alone (as a first start makes it), then no such line", async (t) => {
    const cwd = temporaryDirectory(t)
    const server = await serveForTest(t, {}, cwd)
    assert.deepEqual(
      warnings(server.output()).filter((line) => line.msg.includes('other users can read')),
      [],
    )
  })
})
