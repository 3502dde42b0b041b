import assert from 'node:assert/strict'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { describe, test } from 'node:test'
import { setTimeout } from 'node:timers/promises'
import { generateApiKey } from '../src/auth/api-key.ts'
import { latestVersion } from '../src/store/shared/migration-plan.ts'
import { sqliteMigrations } from '../src/store/sqlite/sqlite-migrations.ts'
import { logLines, requesterFor, runCli, startServeProcess, stop, waitForLog } from './helpers/cli-process.ts'
import { checkedFetch } from './helpers/conformance-fetch.ts'
import { startTestServer, temporaryDirectory } from './helpers/test-server.ts'

const key = generateApiKey()
const request = requesterFor(key)

describe('health probes', () => {
  test('when probed without a key, then /healthz and /readyz answer 200 and carry no data', async (t) => {
    const server = await startTestServer(t)
    const health = await checkedFetch(server.origin, '/healthz')
    assert.equal(health.status, 200)
    assert.deepEqual(await health.json(), { status: 'ok' })
    const ready = await checkedFetch(server.origin, '/readyz')
    assert.equal(ready.status, 200)
    assert.deepEqual(await ready.json(), { status: 'ready' })
  })

  test("when the database's schema is found behind this release's under a running instance (an older release's database put back), then /readyz is 503 in the Error body saying both versions, with a wait for a migration, and /healthz stays 200", async (t) => {
    const cwd = temporaryDirectory(t)
    const server = await startServeProcess({ API_KEYS: `ops:${key}` }, cwd)
    t.after(() => stop(server))
    assert.equal((await checkedFetch(server.origin, '/readyz')).status, 200)
    const latest = latestVersion(sqliteMigrations)
    const db = new DatabaseSync(join(cwd, 'data', 'petstore.db'))
    try {
      db.exec('PRAGMA busy_timeout = 5000')
      db.prepare('DELETE FROM schema_migrations WHERE version = ?').run(latest)
    } finally {
      db.close()
    }
    const response = await checkedFetch(server.origin, '/readyz')
    assert.equal(response.status, 503)
    // A migration takes seconds at least: not the second a reconnect is asked to wait.
    assert.equal(response.headers.get('retry-after'), '5')
    assert.deepEqual(await response.json(), {
      code: 'service_unavailable',
      status: 503,
      message: `not ready: database schema ${latest - 1}, this release needs ${latest}`,
    })
    assert.equal((await checkedFetch(server.origin, '/healthz')).status, 200, 'alive even when not ready')
  })
})

/**
 * Records in the database at `cwd` what the next release's migration leaves behind, as its first instance
 * applies it: compatible (its floor this release's schema) or not. Returns this release's schema version.
 */
function newerMigration(cwd: string, kind: 'compatible' | 'incompatible'): number {
  const db = new DatabaseSync(join(cwd, 'data', 'petstore.db'))
  try {
    db.exec('PRAGMA busy_timeout = 5000')
    const newest = Number(db.prepare('SELECT max(version) AS v FROM schema_migrations').get()?.v)
    const latest = latestVersion(sqliteMigrations)
    const version = newest + 1
    db.prepare('INSERT INTO schema_migrations (version, name, compatible_from) VALUES (?, ?, ?)').run(
      version,
      `a newer release, ${kind}`,
      kind === 'compatible' ? latest : version,
    )
    return latest
  } finally {
    db.close()
  }
}

describe('readiness during an upgrade', () => {
  test("when a newer release migrates the schema under a running instance, keeping this release's working, then it stays ready and serving, and says so once in its log", async (t) => {
    const cwd = temporaryDirectory(t)
    const server = await startServeProcess({ API_KEYS: `ops:${key}` }, cwd)
    t.after(() => server.child.kill('SIGKILL'))
    assert.equal((await checkedFetch(server.origin, '/readyz')).status, 200)
    const latest = newerMigration(cwd, 'compatible')
    for (let probe = 0; probe < 3; probe++) {
      const ready = await checkedFetch(server.origin, '/readyz')
      assert.equal(ready.status, 200, await ready.text())
    }
    assert.equal(
      (await request(server, '/v1/pets', { headers: { 'x-request-id': 'after-probes' } })).status,
      200,
    )
    // The request after the probes is logged after whatever they logged: then every warning is in.
    await waitForLog(server, (lines) => lines.find((line) => line.reqId === 'after-probes'))
    const said = logLines(server).filter((line) =>
      String(line.msg).startsWith('the database schema is newer'),
    )
    assert.equal(said.length, 1, 'said once')
    assert.deepEqual(
      [said[0]?.level, said[0]?.schema, said[0]?.release, said[0]?.compatibleFrom],
      [40, latest + 1, latest, latest],
    )
  })

  test('when a newer release migrates the schema beyond what this release can run on, then a running instance turns not ready, naming the schema it needs, and refuses creates with 503 while reads go on', async (t) => {
    const cwd = temporaryDirectory(t)
    const server = await startServeProcess({ API_KEYS: `ops:${key}` }, cwd)
    t.after(() => server.child.kill('SIGKILL'))
    assert.equal((await checkedFetch(server.origin, '/readyz')).status, 200)
    const latest = newerMigration(cwd, 'incompatible')
    const ready = await checkedFetch(server.origin, '/readyz')
    assert.equal(ready.status, 503)
    assert.equal(ready.headers.get('retry-after'), '5')
    assert.equal(
      ((await ready.json()) as { message: string }).message,
      `not ready: database schema version ${latest + 1} is newer than this release knows (${latest}) and needs a release made for schema ${latest + 1} or later`,
    )
    // A client that reaches it directly (or before the balancer has taken it out) writes nothing into a
    // schema whose meaning this release may not know.
    const create = () =>
      request(server, '/v1/pets', { method: 'POST', body: '{"name":"Rex","categoryId":1}' })
    const refused = await create()
    assert.equal(refused.status, 503, await refused.clone().text())
    assert.equal(refused.headers.get('retry-after'), '5')
    assert.equal(
      ((await refused.json()) as { message: string }).message,
      "this instance's release is older than the database schema; retry on another instance",
    )
    assert.equal((await request(server, '/v1/pets')).status, 200)
    // Said once, at warn: a deployment's state, not a fault (the probe's line names the schema needed).
    const said = await waitForLog(server, (lines) =>
      lines.find((line) => line.condition === "this instance's release is older than the database schema"),
    )
    assert.equal(said.level, 40)
    assert.match(String(said.msg), /requests that meet it are answered 503 until it passes$/)
  })

  test('when a newer release migrates the schema beyond what this release can run on and no probe comes, then within seconds a running instance refuses creates with 503 all the same', async (t) => {
    const cwd = temporaryDirectory(t)
    const server = await startServeProcess({ API_KEYS: `ops:${key}` }, cwd)
    t.after(() => server.child.kill('SIGKILL'))
    newerMigration(cwd, 'incompatible')
    // A deployment without readiness probes (compose, systemd), or a worker no probe reached: the
    // instance reads the schema itself every few seconds.
    const deadline = Date.now() + 15_000
    let status = 0
    while (Date.now() < deadline) {
      const create = await request(server, '/v1/pets', {
        method: 'POST',
        body: '{"name":"Rex","categoryId":1}',
      })
      status = create.status
      if (status === 503) {
        assert.equal(create.headers.get('retry-after'), '5')
        break
      }
      assert.equal(status, 201, await create.text())
      await setTimeout(250)
    }
    assert.equal(status, 503, 'refused without a probe')
    assert.equal((await request(server, '/v1/pets')).status, 200)
  })

  test('when an instance of this release starts on a newer schema (a rollback), then it serves if the newer migrations keep it working, and refuses in one line if not', async (t) => {
    const cwd = temporaryDirectory(t)
    const first = await startServeProcess({ API_KEYS: `ops:${key}` }, cwd)
    await stop(first)
    const latest = newerMigration(cwd, 'compatible')
    const server = await startServeProcess({ API_KEYS: `ops:${key}` }, cwd)
    t.after(() => server.child.kill('SIGKILL'))
    assert.equal((await checkedFetch(server.origin, '/readyz')).status, 200)
    assert.equal((await request(server, '/v1/pets')).status, 200)
    const warned = await waitForLog(server, (lines) =>
      lines.find((line) => String(line.msg).startsWith('the database schema is newer than this release')),
    )
    assert.deepEqual([warned.level, warned.schema, warned.release], [40, latest + 1, latest])
    await stop(server)
    newerMigration(cwd, 'incompatible')
    const refused = await runCli(['serve'], { API_KEYS: `ops:${key}`, PORT: '0', METRICS_PORT: '0' }, cwd)
    assert.equal(refused.status, 1)
    assert.equal(
      refused.stderr,
      `petstore serve: database schema version ${latest + 2} is newer than this release knows (${latest}) and needs a release made for schema ${latest + 2} or later\n`,
    )
  })
})
