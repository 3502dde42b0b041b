import assert from 'node:assert/strict'
import type { ChildProcess } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { describe, test } from 'node:test'
import { waitUntil } from './helpers/bounded-wait.ts'
import { logLines, runCli, startServeProcess, stop } from './helpers/cli-process.ts'
import { rowCount } from './helpers/sqlite-file.ts'
import { call, serve, walk } from './helpers/store-copy-fixtures.ts'
import { temporaryDirectory } from './helpers/test-server.ts'

/** The pets a SQLite file holds; 0 while it is not there or not readable yet. */
function petsIn(path: string): number {
  if (!existsSync(path)) return 0
  try {
    return rowCount(path, 'pets')
  } catch {
    return 0
  }
}

/** Sends `signal` to a copy once its target holds a pet: stopped part way. */
function killOnceCopying(child: ChildProcess, target: string, signal: NodeJS.Signals): void {
  const poll = setInterval(() => {
    if (petsIn(target) === 0) return
    clearInterval(poll)
    child.kill(signal)
  }, 5)
  child.once('exit', () => clearInterval(poll))
}

// `petstore copy` between two SQLite files, as an operator runs it: a failed or stopped copy and what it
// leaves. The stores it refuses and a staging copy have files of their own (copy-cli-*.test.ts), as have
// the engines' copies (copy-*.test.ts).
describe('petstore copy, SQLite to SQLite', () => {
  test('when a copy into a new SQLite file fails (its source cannot be reached), then exit 1 with one line saying which store, and no file is left where the target was named', async (t) => {
    const cwd = temporaryDirectory(t)
    // Port 9 (discard) on the loopback: refused at once.
    const result = await runCli(
      ['copy', '--from', 'postgres://petstore@127.0.0.1:9/petstore', '--to', 'sqlite:x.db'],
      {},
      cwd,
    )
    assert.deepEqual(
      [result.status, result.stderr],
      [
        1,
        'petstore copy: --from (the source): the database is unreachable: connect ECONNREFUSED 127.0.0.1:9\n',
      ],
    )
    const left = ['x.db', 'x.db-wal', 'x.db-shm'].filter((name) => existsSync(join(cwd, name)))
    assert.deepEqual(left, [], 'a later start or copy would take an empty file for a store')
  })

  test('when a copy into a new SQLite file is stopped by SIGTERM after its first chunks, then the file is kept with them, and a re-run finishes it', async (t) => {
    const cwd = temporaryDirectory(t)
    assert.equal(
      (await runCli(['seed', '--count', '20000'], { DATABASE_URL: 'sqlite:source.db' }, cwd)).status,
      0,
    )
    const pets = () => petsIn(join(cwd, 'target.db'))
    const args = ['copy', '--from', 'sqlite:source.db', '--to', 'sqlite:target.db']
    // A pet per transaction: seconds for the whole, so it is stopped part way.
    const stopped = await runCli([...args, '--chunk-size', '1'], {}, cwd, {
      timeoutMs: 120_000,
      started: (child) => killOnceCopying(child, join(cwd, 'target.db'), 'SIGTERM'),
    })
    assert.equal(stopped.status, 143, stopped.stderr)
    assert.ok(pets() > 0 && pets() < 20000, `${pets()} pets kept`)
    const again = await runCli(args, {}, cwd)
    assert.equal(again.status, 0, again.stderr)
    assert.equal(pets(), 20000)
  })

  test('when the terminal a copy runs in goes away (SIGHUP, an ssh session dropped), then it stops as for SIGTERM: one line saying to run it again, exit 129', async (t) => {
    const cwd = temporaryDirectory(t)
    assert.equal(
      (await runCli(['seed', '--count', '20000'], { DATABASE_URL: 'sqlite:source.db' }, cwd)).status,
      0,
    )
    const args = ['copy', '--from', 'sqlite:source.db', '--to', 'sqlite:target.db', '--chunk-size', '1']
    const stopped = await runCli(args, {}, cwd, {
      timeoutMs: 120_000,
      started: (child) => killOnceCopying(child, join(cwd, 'target.db'), 'SIGHUP'),
    })
    assert.deepEqual(
      [stopped.status, stopped.stderr.split('\n').at(-2)],
      [
        129,
        'petstore copy: stopped by SIGHUP before the end; the target holds whole chunks: run the same command again to finish',
      ],
    )
  })

  test('when the service starts on a copy stopped part way, then it says so at warn, with what to run; once a re-run finishes the copy, it says nothing of it', async (t) => {
    const cwd = temporaryDirectory(t)
    const source = { DATABASE_URL: 'sqlite:source.db' }
    assert.equal((await runCli(['seed', '--count', '50'], source, cwd)).status, 0)
    assert.equal((await runCli(['keys', 'create', '--name', 'ops'], source, cwd)).status, 0)
    const args = ['copy', '--from', 'sqlite:source.db', '--to', 'sqlite:target.db', '--chunk-size', '10']
    assert.equal((await runCli([...args, '--max-chunks', '2'], {}, cwd)).status, 3)
    const warningsOf = async () => {
      const server = await startServeProcess({ DATABASE_URL: 'sqlite:target.db' }, cwd)
      t.after(() => server.child.kill('SIGKILL'))
      await stop(server)
      return logLines(server)
        .filter((line) => line.level === 40)
        .map(({ msg, copyStartedAt }) => ({ msg, copyStartedAt: typeof copyStartedAt }))
    }
    assert.deepEqual(await warningsOf(), [
      {
        msg:
          'this store is an unfinished copy: it lacks what the copy has not reached yet (pets, keys, ' +
          'Idempotency-Key records); run the same petstore copy again to finish it',
        copyStartedAt: 'string',
      },
    ])
    assert.equal((await runCli(args, {}, cwd)).status, 0)
    assert.deepEqual(await warningsOf(), [])
  })

  test('when a copy goes into a store a server is serving, then the list pages it kept are let go: once the copy ends, a walk finds every pet', {
    timeout: 60_000,
  }, async (t) => {
    const cwd = temporaryDirectory(t)
    assert.equal(
      (await runCli(['seed', '--count', '30'], { DATABASE_URL: 'sqlite:source.db' }, cwd)).status,
      0,
    )
    const server = await serve(t, { DATABASE_URL: 'sqlite:target.db' }, cwd)
    const key = readFileSync(join(cwd, 'initial-api-key'), 'utf8').trim()
    const args = ['copy', '--from', 'sqlite:source.db', '--to', 'sqlite:target.db', '--chunk-size', '10']
    const into = [...args, '--into-non-empty', '--without-keys']
    assert.equal((await runCli([...into, '--max-chunks', '1'], {}, cwd)).status, 3)
    // Created above the source's ids (the copy raised the sequence): pets 31 to 33.
    for (const name of ['a', 'b', 'c']) {
      const created = await call(server, key, '/v1/pets', {
        method: 'POST',
        body: `{"name":"${name}","categoryId":1}`,
      })
      assert.equal(created.status, 201)
    }
    const ids = async () =>
      (await walk(server, key, '/v1/pets?limit=2')).flatMap((page) =>
        (JSON.parse(page.slice(page.indexOf('\n') + 1)) as Array<{ id: number }>).map((pet) => pet.id),
      )
    // The page after pet 10 is full ([31, 32], 33 after it): kept, it would hide pets 11 to 30 for good.
    assert.deepEqual(await ids(), [...Array.from({ length: 10 }, (_, i) => i + 1), 31, 32, 33])
    assert.equal((await runCli(into, {}, cwd)).status, 0)
    const every = Array.from({ length: 33 }, (_, i) => i + 1)
    let last: number[] = []
    await waitUntil(
      async () => {
        last = await ids()
        return JSON.stringify(last) === JSON.stringify(every)
      },
      () => `a walk found ${JSON.stringify(last)}`,
      { timeoutMs: 15_000, everyMs: 500 },
    )
    await stop(server)
  })

  test('when a copy of a store no server has opened (seeded, keys made) is stopped and run again, then a re-run with --max-chunks copies that many more, and one without finishes it', async (t) => {
    const cwd = temporaryDirectory(t)
    const source = { DATABASE_URL: 'sqlite:source.db' }
    assert.equal((await runCli(['seed', '--count', '50'], source, cwd)).status, 0)
    assert.equal((await runCli(['keys', 'create', '--name', 'ops'], source, cwd)).status, 0)
    const args = ['copy', '--from', 'sqlite:source.db', '--to', 'sqlite:target.db', '--chunk-size', '10']
    const stopped = await runCli([...args, '--max-chunks', '2'], {}, cwd)
    assert.equal(stopped.status, 3, stopped.stderr)
    const partial = new DatabaseSync(join(cwd, 'target.db'), { readOnly: true })
    const copiedFirst = partial.prepare('SELECT count(*) AS n FROM pets').get()?.n
    partial.close()
    assert.equal(copiedFirst, 20, 'two chunks of 10, no more')
    // Chunks the first run copied are walked past, not counted: two more are copied.
    assert.equal((await runCli([...args, '--max-chunks', '2'], {}, cwd)).status, 3)
    const partialAgain = new DatabaseSync(join(cwd, 'target.db'), { readOnly: true })
    const copiedThen = partialAgain.prepare('SELECT count(*) AS n FROM pets').get()?.n
    partialAgain.close()
    assert.equal(copiedThen, 40, 'two chunks more')
    const rerun = await runCli(args, {}, cwd)
    assert.equal(rerun.status, 0, rerun.stderr)
    const again = await runCli(args, {}, cwd)
    assert.equal(again.status, 0, `a copy run over a finished one: ${again.stderr}`)
    const target = new DatabaseSync(join(cwd, 'target.db'), { readOnly: true })
    t.after(() => target.close())
    assert.equal(target.prepare('SELECT count(*) AS n FROM pets').get()?.n, 50)
    assert.equal(target.prepare('SELECT count(*) AS n FROM api_keys').get()?.n, 1)
  })
})
