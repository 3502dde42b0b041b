import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { once } from 'node:events'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { waitFor, waitUntil, within } from './helpers/bounded-wait.ts'
import { CLI, cliEnvironment, spawnCollecting } from './helpers/cli-process.ts'
import { silentListener } from './helpers/silent-listener.ts'
import { suiteNeeding } from './helpers/suite-requirements.ts'
import { temporaryDirectory } from './helpers/test-server.ts'

// A container's entry point is PID 1, which the kernel spares every signal it has no handler for.
const pidNamespaces =
  spawnSync('unshare', ['--pid', '--fork', '--mount-proc', 'true']).status === 0
    ? undefined
    : {
        missing: 'no PID namespace can be made here (unshare, as root)',
        remedy: 'run as root with util-linux (apt-get install util-linux)',
      }

describe('the service as PID 1', suiteNeeding('the PID 1 suite', pidNamespaces), () => {
  for (const [signal, code] of [
    ['SIGTERM', 143],
    ['SIGINT', 130],
  ] as const) {
    test(`when ${signal} comes while it is still starting (its database not answering yet), then it exits at once with ${code} rather than ignore it until a SIGKILL`, async (t) => {
      // A database that takes connections and never answers: the start waits on it.
      const database = await silentListener(t)
      const child = spawn('unshare', ['--pid', '--fork', '--mount-proc', process.execPath, CLI, 'serve'], {
        env: cliEnvironment({
          DATABASE_URL: `postgres://petstore@127.0.0.1:${database.port}/petstore`,
          PG_CONNECT_TIMEOUT_MS: '600000',
          PORT: '0',
        }),
        stdio: 'ignore',
      })
      t.after(() => child.kill('SIGKILL'))
      const exited = once(child, 'exit')
      await waitUntil(database.connected, 'the start reaches the database', { timeoutMs: 20_000 })
      // The service itself, PID 1 of the namespace: the one child of unshare.
      const children = readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, 'utf8').trim()
      const service = Number(children.split(' ')[0])
      assert.ok(service > 0, children)
      process.kill(service, signal)
      const [exitCode] = await within(exited, 5000, `${signal} ignored by PID 1`)
      assert.equal(exitCode, code)
    })
  }

  for (const [how, service] of [
    ['as PID 1', `${process.execPath} ${CLI} serve`],
    // `--init`, compose's `init: true`, or a shell as the entry point: PID 1 is another process.
    ['as the child of PID 1 (an init)', `sh -c "${process.execPath} ${CLI} serve & wait"`],
  ] as const) {
    test(`when it first starts ${how} with a terminal for its output (a container run with -t, whose terminal is its log), then the initial key goes to data/initial-api-key, never to the output`, async (t) => {
      const cwd = temporaryDirectory(t)
      // `script` gives it a terminal (a pseudo-terminal) and copies it to a pipe, as a log driver would.
      const serve = `unshare --pid --fork --kill-child --mount-proc ${service}`
      const { output } = spawnCollecting(
        t,
        'script',
        ['--quiet', '--return', '--command', serve, '/dev/null'],
        {
          env: cliEnvironment({
            HOST: '127.0.0.1',
            PORT: '0',
            METRICS_PORT: '0',
            LOG_LEVEL: 'info',
            TERM: 'xterm',
          }),
          cwd,
        },
      )
      await waitFor(
        () => output().includes('serving http') || undefined,
        () => `it did not say it serves:\n${output()}`,
        { timeoutMs: 15_000, everyMs: 20 },
      )
      assert.doesNotMatch(output(), /psk_/, 'no key in the output')
      const file = join(cwd, 'data', 'initial-api-key')
      assert.ok(existsSync(file), `no ${file}:\n${output()}`)
      assert.match(readFileSync(file, 'utf8'), /^psk_[\w-]{43}\n$/)
    })
  }
})
