import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { chmodSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { temporaryDirectory } from './helpers/cleanup.ts'
import { CLI, cliEnvironment, runCli } from './helpers/cli-process.ts'
import { straceSuiteOptions } from './helpers/strace.ts'

describe('the files a restore writes (SQLite, their creation traced by strace)', straceSuiteOptions(), () => {
  test("when the backup is readable by others, then the restore's copy of it is made for its owner alone from its first byte, not made so afterwards", async (t) => {
    const cwd = temporaryDirectory(t)
    assert.equal((await runCli(['seed', '--count', '3'], {}, cwd)).status, 0)
    assert.equal((await runCli(['backup', '--to', 'b.db'], {}, cwd)).status, 0)
    chmodSync(join(cwd, 'b.db'), 0o644)
    const trace = join(cwd, 'opens.trace')
    const restore = spawnSync(
      'strace',
      [
        '-f',
        '-qq',
        '-e',
        'trace=open,openat',
        '-o',
        trace,
        process.execPath,
        CLI,
        'restore',
        '--from',
        'b.db',
      ],
      { env: cliEnvironment({}), cwd, encoding: 'utf8' },
    )
    assert.equal(restore.status, 0, restore.stderr)
    // Every file the restore made new (O_EXCL) under a hidden name beside the database, with its mode then.
    const made = [
      ...readFileSync(trace, 'utf8').matchAll(
        /open(?:at)?\(.*"([^"]*\/\.[^"]+)", [^)]*O_CREAT\|O_EXCL[^)]*, (0\d+)\)/g,
      ),
    ]
    const copies = made.filter(([, path]) => /\.restore-[^/]*\.tmp$/.test(path ?? ''))
    assert.ok(
      copies.length > 0,
      `no copy made under a hidden name:\n${made.map(([line]) => line).join('\n')}`,
    )
    for (const [line, , mode] of copies) assert.equal(mode, '0600', line)
  })
})
