import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { generateApiKey } from '../src/auth/api-key.ts'
import { progressLine } from '../src/cli/copy-command.ts'
import { SqliteStore } from '../src/store/sqlite/sqlite-store.ts'
import { waitUntil } from './helpers/bounded-wait.ts'
import { runCli } from './helpers/cli-process.ts'
import { holdsOpen } from './helpers/open-files.ts'
import { seedStore } from './helpers/store-copy-fixtures.ts'
import { temporaryDirectory } from './helpers/test-server.ts'

const PETS = 2000
const CHUNK = 100
// The README's promise: a line at most every 2 s (src/cli/copy-command.ts, PROGRESS_EVERY_MS).
const PROGRESS_EVERY_MS = 2000
// Longer than a progress interval, well inside the copy's 5 s wait for a busy SQLite file.
const HELD_MS = 2500
const PROGRESS = /^petstore copy: (\d+) of (\d+) pets \((\d+)%, (\d+)\/s\)$/

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8')

describe('copy progress', () => {
  test("when a copy runs longer than 2 s, then stderr carries its progress lines in the README's form, no more often than every 2 s, and stdout only its summary", {
    timeout: 120_000,
  }, async (t) => {
    const cwd = temporaryDirectory(t)
    const source = join(cwd, 'source.db')
    const target = join(cwd, 'target.db')
    await seedStore(new SqliteStore({ path: source, busyTimeoutMs: 5000 }), PETS, {
      oldKey: generateApiKey(),
      revokedKey: generateApiKey(),
    })
    // The test holds the target's write lock, so the copy, once started, waits for it: a copy that lasts
    // more than 2 s whatever the machine's speed.
    const holder = new DatabaseSync(target)
    t.after(() => holder.close())
    holder.exec('PRAGMA journal_mode = WAL')
    holder.exec('BEGIN IMMEDIATE')

    let pid: number | undefined
    const began = performance.now()
    const copying = runCli(
      ['copy', '--from', `sqlite:${source}`, '--to', `sqlite:${target}`, '--chunk-size', String(CHUNK)],
      {},
      cwd,
      {
        timeoutMs: 120_000,
        started: (child) => {
          pid = child.pid
        },
      },
    )
    await waitUntil(() => holdsOpen(pid, target), 'the copy opens its target')
    await sleep(HELD_MS)
    holder.exec('COMMIT')
    const copied = await copying
    const elapsedMs = performance.now() - began

    assert.equal(copied.status, 0, copied.stderr)
    assert.match(copied.stdout, new RegExp(`^copied ${PETS} pets, 2 API keys, \\d+ idempotency records in `))
    assert.equal(copied.stdout.split('\n').length, 2, 'one summary line on stdout')
    const lines = copied.stderr.trimEnd().split('\n')
    assert.ok(lines.length >= 1 && lines.every((line) => PROGRESS.test(line)), copied.stderr)
    assert.ok(lines.length <= elapsedMs / PROGRESS_EVERY_MS, `${lines.length} lines in ${elapsedMs} ms`)
    let before = 0
    for (const line of lines) {
      const [walked = 0, total, percent, rate = 0] = (PROGRESS.exec(line) as RegExpExecArray)
        .slice(1)
        .map(Number)
      assert.equal(total, PETS, line)
      assert.ok(walked > before && walked <= PETS && walked % CHUNK === 0, line)
      assert.equal(percent, Math.floor((walked / PETS) * 100), line)
      // Per second since the start, which is 2 s ago at least (a rate per chunk would be far higher).
      assert.ok(rate <= walked / (PROGRESS_EVERY_MS / 1000), line)
      before = walked
    }
    const example = /`(petstore copy: \d+ of \d+ pets \([^`]*)`/.exec(readme)?.[1]
    assert.match(example ?? 'no progress line in the README', PROGRESS)
  })

  test('when the source holds more pets than it did when the copy counted them (it takes writes), then the progress line makes up no share past 100 %', () => {
    assert.equal(progressLine(450, 1000, 90), 'petstore copy: 450 of 1000 pets (45%, 90/s)\n')
    assert.equal(progressLine(1000, 1000, 90), 'petstore copy: 1000 of 1000 pets (100%, 90/s)\n')
    assert.equal(
      progressLine(1050, 1000, 90),
      'petstore copy: 1050 pets (1000 when it started: the source takes writes, 90/s)\n',
    )
  })
})
