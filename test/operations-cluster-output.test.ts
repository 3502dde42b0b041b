import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { describe, test } from 'node:test'
import { generateApiKey } from '../src/auth/api-key.ts'
import { waitFor, within } from './helpers/bounded-wait.ts'
import { temporaryDirectory } from './helpers/cleanup.ts'
import { CLI, cliEnvironment } from './helpers/cli-process.ts'
import { serveWorkers } from './helpers/cluster-process.ts'

const key = generateApiKey()
const env = { API_KEYS: `ops:${key}`, WORKERS: '2' }

describe('worker output', () => {
  test("when LOG_FORMAT=pretty, then every worker writes its lines for people on the service's stdout, none on its stderr", async (t) => {
    const { child, output, stop } = serveWorkers(t, { ...env, LOG_FORMAT: 'pretty' })
    const serving = await waitFor(
      () => {
        const pids = [...output.stdout.matchAll(/INFO \((\d+)\): serving http/g)].map((match) => match[1])
        return new Set(pids).size === 2 ? pids : undefined
      },
      () => `two workers did not say they serve on stdout:\n${output.stdout}\nstderr:\n${output.stderr}`,
      { timeoutMs: 15_000, everyMs: 20 },
    )
    assert.ok(!serving.includes(String(child.pid)), 'the supervisor does not serve')
    assert.ok(!output.stdout.includes('{"level"'), `a JSON line:\n${output.stdout}`)
    assert.equal(output.stderr, '')
    assert.deepEqual(await stop(), [0, null])
  })

  test("when workers print outside their log (NODE_DEBUG=http), then every line reaches the service's stderr whole, one for every answer, and stdout holds only log lines", async (t) => {
    const { output, stop } = serveWorkers(t, { ...env, NODE_DEBUG: 'http' })
    const origin = await waitFor(
      () => {
        const serving = output.stdout.match(/serving http:\/\/[\d.]+:\d+/g) ?? []
        return serving.length === 2 ? serving[0]?.slice('serving '.length) : undefined
      },
      () => `two workers did not say they serve:\n${output.stdout}\nstderr:\n${output.stderr}`,
      { timeoutMs: 15_000, everyMs: 20 },
    )
    // A connection each, so that both workers answer, their debug lines written at the same moments.
    const answers = await Promise.all(
      Array.from({ length: 200 }, () => fetch(`${origin}/healthz`, { headers: { connection: 'close' } })),
    )
    assert.deepEqual(new Set(answers.map((answer) => answer.status)), new Set([200]))
    assert.deepEqual(await stop(), [0, null])
    const lines = output.stderr.split('\n')
    assert.equal(lines.pop(), '', 'the last line is ended')
    const mixed = lines.filter((line) => !/^(HTTP \d+: |\(node:\d+\) Warning: |\(Use `node )/.test(line))
    assert.deepEqual(mixed, [], 'lines cut or run together')
    const ended = lines.filter((line) => line.endsWith(': outgoing message end.'))
    assert.equal(ended.length, 200, 'a debug line for every answer')
    assert.equal(new Set(ended.map((line) => line.split(':')[0])).size, 2, 'both workers answered')
    for (const line of output.stdout.trimEnd().split('\n')) assert.ok(line.startsWith('{"level"'), line)
  })

  test("when the service's stderr is gone, then the workers' output it could not pass on is counted in the supervisor's metrics and said in its log, pretty included", {
    timeout: 60_000,
  }, async (t) => {
    // A replacement worker's module loading (NODE_DEBUG) is output the supervisor relays and must drop.
    const { child, output, stop } = serveWorkers(t, { ...env, LOG_FORMAT: 'pretty', NODE_DEBUG: 'module' })
    const { pids, metricsPort } = await waitFor(
      () => {
        const serving = [...output.stdout.matchAll(/INFO \((\d+)\): serving http/g)].map((match) => match[1])
        const port = /metricsPort: (\d+)/.exec(output.stdout)?.[1]
        return serving.length === 2 && port ? { pids: serving.map(Number), metricsPort: port } : undefined
      },
      () => `two workers did not say they serve, or no metrics port:\n${output.stdout}`,
      { timeoutMs: 15_000, everyMs: 20 },
    )
    assert.match(output.stderr, new RegExp(`^MODULE ${pids[0]}: `, 'm'), 'the workers wrote debug lines')
    // The reader is gone: every write to the service's stderr fails with EPIPE from now on.
    child.stderr.destroy()
    process.kill(pids[0] as number, 'SIGKILL')
    const said = await waitFor(
      () =>
        /WARN \((\d+)\): workers' output dropped: standard error did not keep up\n\s+droppedLines: (\d+)/.exec(
          output.stdout,
        ) ?? undefined,
      () => `no warning of the dropped lines:\n${output.stdout}`,
      { timeoutMs: 25_000, everyMs: 200 },
    )
    assert.equal(Number(said[1]), child.pid, 'said by the supervisor')
    const warned = Number(said[2])
    assert.ok(warned > 0, said[0])
    const scrape = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text()
    const counted = Number(/^petstore_worker_output_lines_dropped_total (\d+)$/m.exec(scrape)?.[1])
    assert.ok(counted >= warned, `${counted} counted in the metrics, ${warned} said in the log`)
    // Stdout is read: no log line was lost, and the log's counter says so.
    assert.match(scrape, /^petstore_log_lines_dropped_total 0$/m)
    assert.deepEqual(await stop(), [0, null])
  })

  test("when its stdout is a terminal, then workers' lines are coloured as the supervisor's are", async (t) => {
    // `script` gives the service a terminal of its own (a pseudo-terminal) and copies it to a pipe.
    const serve = [process.execPath, CLI, 'serve'].map((word) => `'${word}'`).join(' ')
    const child = spawn('script', ['--quiet', '--return', '--command', serve, '/dev/null'], {
      env: cliEnvironment({ ...env, HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info', TERM: 'xterm' }),
      cwd: temporaryDirectory(t),
      stdio: ['pipe', 'pipe', 'pipe'],
    })
    t.after(() => child.kill('SIGKILL'))
    let terminal = ''
    child.stdout.setEncoding('utf8').on('data', (text: string) => {
      terminal += text
    })
    // No `script` (util-linux) on the machine: the wait below fails saying so.
    child.on('error', (error) => {
      terminal += `${error}`
    })
    const serving = await waitFor(
      () => {
        const lines = terminal.split('\n').filter((line) => line.includes('serving http'))
        return lines.length === 2 ? lines : undefined
      },
      () => `two workers did not say they serve:\n${terminal}`,
      { timeoutMs: 15_000, everyMs: 20 },
    )
    for (const line of serving) assert.ok(line.includes('\u001b['), `not coloured: ${JSON.stringify(line)}`)
    const supervisor = /\((\d+)\): [^\n]*supervising workers/.exec(terminal)?.[1]
    assert.ok(supervisor, `no supervisor line:\n${terminal}`)
    const exited = once(child, 'exit')
    process.kill(Number(supervisor), 'SIGTERM')
    assert.deepEqual(await within(exited, 10_000, () => `no exit:\n${terminal}`), [0, null])
  })
})
