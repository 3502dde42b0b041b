import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { waitUntil, within } from './helpers/bounded-wait.ts'
import { CLI, cliEnvironment, spawnCollecting } from './helpers/cli-process.ts'
import { silentListener } from './helpers/silent-listener.ts'
import { temporaryDirectory } from './helpers/test-server.ts'

describe('a stop signal while the service starts', () => {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    test(`when ${signal} comes while it is still starting (its database not answering yet), then the lines logged so far are written, one more says it stopped before serving, and it ends by that signal`, async (t) => {
      const cwd = temporaryDirectory(t)
      // Said at warn as the start reads it: a line logged before the signal comes.
      writeFileSync(join(cwd, '.env'), 'PROT=8080\n')
      // A database that takes connections and never answers: the start waits on it.
      const database = await silentListener(t)
      const { child, exited, output } = spawnCollecting(t, process.execPath, [CLI, 'serve'], {
        env: cliEnvironment({
          DATABASE_URL: `postgres://petstore@127.0.0.1:${database.port}/petstore`,
          PG_CONNECT_TIMEOUT_MS: '600000',
          PORT: '0',
          LOG_LEVEL: 'info',
        }),
        cwd,
      })
      await waitUntil(database.connected, 'the start reaches the database', { timeoutMs: 20_000 })
      child.kill(signal)
      const [code, endedBy] = await within(exited, 5000, `${signal} did not end the start`)
      assert.deepEqual([code, endedBy], [null, signal], 'ended by the signal, as a stop systemd counts clean')
      const lines = output()
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => JSON.parse(line) as { msg: string; signal?: string })
      assert.ok(
        lines.some((line) => /^\.env sets PROT/.test(line.msg)),
        `the .env warning, logged before the signal:\n${output()}`,
      )
      assert.deepEqual(lines.at(-1), {
        ...lines.at(-1),
        signal,
        msg: 'stopped during start-up, before serving',
      })
    })
  }

  test('when SIGTERM comes as soon as the process is started, while its modules load, then it ends at once by that signal, having logged nothing', async (t) => {
    const { child, exited, output } = spawnCollecting(t, process.execPath, [CLI, 'serve'], {
      env: cliEnvironment({ PORT: '0', LOG_LEVEL: 'info' }),
      cwd: temporaryDirectory(t),
    })
    child.kill('SIGTERM')
    const [code, endedBy] = await within(exited, 10_000, 'SIGTERM did not end the start')
    assert.deepEqual([code, endedBy], [null, 'SIGTERM'], output())
    assert.equal(output(), '')
  })
})
