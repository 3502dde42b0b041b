import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { once } from 'node:events'
import { describe, test } from 'node:test'
import { startThrowawayPostgres, throwawayPostgresSuiteOptions } from './helpers/postgres-server.ts'
import { postgresSql } from './helpers/store-engines.ts'

// A test process of its own: makes `count` databases through the helpers, prints their names, and with
// `hold` stays alive until its stdin ends.
const TEST_PROCESS = `
  import { sharedPostgres } from './test/helpers/postgres-server.ts'
  const server = await sharedPostgres()
  for (let i = 0; i < Number(process.argv[1]); i++) console.log(new URL(await server.createDatabase()).pathname.slice(1))
  if (process.argv[2] === 'hold') process.stdin.resume()
`

function testProcess(named: string, count: number, hold = false) {
  const child = spawn(
    process.execPath,
    ['--input-type=module', '-e', TEST_PROCESS, String(count), hold ? 'hold' : ''],
    { env: { ...process.env, PETSTORE_TEST_POSTGRES_URL: named }, stdio: ['pipe', 'pipe', 'inherit'] },
  )
  // Listened for at once: an exit seen before the last line was read would otherwise be missed.
  const exited = once(child, 'exit')
  let out = ''
  child.stdout.setEncoding('utf8').on('data', (chunk) => {
    out += chunk
  })
  const names = async () => {
    while (out.split('\n').length <= count) await once(child.stdout, 'data')
    return out.trim().split('\n')
  }
  return { child, names, exited }
}

describe(
  'the databases tests make on a server named by PETSTORE_TEST_POSTGRES_URL',
  throwawayPostgresSuiteOptions(),
  () => {
    test('when a test process starts, then it drops the databases made on this host by test processes that have ended, and keeps those of one still running and of another host', async (t) => {
      const server = await startThrowawayPostgres()
      t.after(() => server.stop('immediate'))
      // This process's own, made through the server's own factory: it runs, so it is kept.
      const named = new URL(await server.createDatabase())
      const mine = named.pathname.slice(1)
      named.pathname = '/postgres'
      const url = named.toString()
      // A process id that has ended, on another host: nothing here says whether it still runs.
      const gone = spawnSync('true').pid as number
      const elsewhere = `petstore_test_00000000_${gone}_0123abcd`
      await postgresSql(url, `CREATE DATABASE ${elsewhere}`)

      const ended = testProcess(url, 2)
      const endedNames = await ended.names()
      await ended.exited
      const running = testProcess(url, 1, true)
      t.after(() => running.child.kill())
      const runningNames = await running.names()
      const next = testProcess(url, 1)
      const nextNames = await next.names()
      await next.exited

      const left = (
        await postgresSql(url, "SELECT datname FROM pg_database WHERE datname LIKE 'petstore\\_test\\_%'")
      )
        .map((row) => String(row.datname))
        .sort()
      assert.deepEqual(
        left,
        [elsewhere, mine, ...runningNames, ...nextNames].sort(),
        "the ended process's databases are dropped; this one's, the running one's, the next one's and another host's are kept",
      )
      assert.equal(endedNames.length, 2)
    })
  },
)
