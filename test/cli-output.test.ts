import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { once } from 'node:events'
import { closeSync, existsSync, openSync } from 'node:fs'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { get } from './helpers/bearer-call.ts'
import { within } from './helpers/bounded-wait.ts'
import { CLI, cliEnvironment, runCli, startServeProcess } from './helpers/cli-process.ts'
import { temporaryDirectory } from './helpers/test-server.ts'

/** Runs a command whose stdout's reader is gone before it writes, like `| head -c 0`; its exit and stderr. */
async function withReaderGone(t: { after(fn: () => unknown): void }, args: string[], cwd: string) {
  const child = spawn(process.execPath, [CLI, ...args], {
    cwd,
    env: cliEnvironment({}),
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  t.after(() => child.kill('SIGKILL'))
  let stderr = ''
  child.stderr.on('data', (chunk) => {
    stderr += chunk
  })
  child.stdout.destroy()
  const [code] = await within(once(child, 'exit'), 20_000, 'the command did not end')
  return { code, stderr }
}

describe('petstore CLI: commands on a database', () => {
  test('when printing the OpenAPI document, then it is the one the server serves', async (t) => {
    const cwd = temporaryDirectory(t)
    const printed = await runCli(['openapi'], { PORT: '0' }, cwd)
    assert.equal(printed.status, 0)
    const server = await startServeProcess({ API_KEYS: '' }, cwd)
    t.after(() => server.child.kill('SIGKILL'))
    const served = JSON.parse((await get(server.origin, '/v1/openapi.json')).text)
    assert.deepEqual(JSON.parse(printed.stdout), served)
  })

  test('when standard output cannot take the new key (a full disk, a reader gone), then keys create revokes it, says so in one line and exits 1', async (t) => {
    const cwd = temporaryDirectory(t)
    const full = openSync('/dev/full', 'w')
    t.after(() => closeSync(full))
    const onFullDisk = await runCli(['keys', 'create', '--name', 'lost'], {}, cwd, { stdout: full })
    assert.equal(onFullDisk.status, 1, onFullDisk.stderr)
    assert.match(
      onFullDisk.stderr,
      /^petstore keys: standard output did not take the key \(ENOSPC\): it was revoked/m,
    )
    assert.doesNotMatch(onFullDisk.stderr, /only time it is shown|\n\s+at /)

    const { code, stderr } = await withReaderGone(t, ['keys', 'create', '--name', 'gone'], cwd)
    assert.equal(code, 1, stderr)
    assert.match(stderr, /standard output did not take the key \(EPIPE\): it was revoked/)

    const keys = JSON.parse((await runCli(['keys', 'list', '--json'], {}, cwd)).stdout) as Array<
      Record<string, unknown>
    >
    const active = keys.filter((key) => key.revokedAt === null).map((key) => key.name)
    assert.deepEqual(active, [], 'no active key is one nobody was shown')
    assert.equal(
      (await runCli(['keys', 'create', '--name', 'lost'], {}, cwd)).status,
      0,
      'and the name is free',
    )
  })

  test('when standard output is /dev/null, or closed (which Node opens on /dev/null), then keys create refuses in one line before making a key, and exits 1', async (t) => {
    const cwd = temporaryDirectory(t)
    const nothing = openSync('/dev/null', 'w')
    t.after(() => closeSync(nothing))
    const toNull = await runCli(['keys', 'create', '--name', 'unseen'], {}, cwd, { stdout: nothing })
    const closed = spawnSync(
      'sh',
      ['-c', '"$0" "$@" >&-', process.execPath, CLI, 'keys', 'create', '--name', 'unseen'],
      {
        cwd,
        env: cliEnvironment({}),
        encoding: 'utf8',
      },
    )
    for (const { status, stderr } of [toNull, closed]) {
      assert.equal(status, 1, stderr)
      assert.match(
        stderr,
        /^petstore keys: standard output is \/dev\/null \(or closed\): the key would be shown nowhere; run it where its output is kept \(a terminal, a file, a pipe\)$/m,
      )
      assert.doesNotMatch(stderr, /only time it is shown|\n\s+at /)
    }
    assert.equal(existsSync(join(cwd, 'data', 'petstore.db')), false, 'nothing was made, not even a database')
  })

  test('when standard output is on a full disk, then a command says so in one line, without a stack, and exits 1', async (t) => {
    const cwd = temporaryDirectory(t)
    assert.equal((await runCli(['keys', 'create', '--name', 'ops'], {}, cwd)).status, 0)
    const full = openSync('/dev/full', 'w')
    t.after(() => closeSync(full))
    for (const args of [['openapi'], ['keys', 'list']]) {
      const result = await runCli(args, {}, cwd, { stdout: full })
      assert.equal(result.status, 1, result.stderr)
      assert.match(
        result.stderr,
        /^petstore: standard output could not be written \(ENOSPC\)/m,
        args.join(' '),
      )
      assert.doesNotMatch(result.stderr, /\n\s+at /)
    }
  })

  test('when the reader of its output stops early, then the command ends quietly, without a stack', async (t) => {
    const { code, stderr } = await withReaderGone(t, ['openapi'], temporaryDirectory(t))
    assert.equal(stderr, '')
    assert.equal(code, 0)
  })
})
