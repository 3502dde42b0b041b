import assert from 'node:assert/strict'
import { readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { get } from './helpers/bearer-call.ts'
import { exitWithin, runCli, startServeProcess } from './helpers/cli-process.ts'
import { temporaryDirectory } from './helpers/test-server.ts'

const KEY = /^psk_[A-Za-z0-9_-]{43}$/

describe('petstore CLI: commands on a database', () => {
  test('when keys are created, listed and revoked, then the key is shown once and a server refuses it after revocation', async (t) => {
    const cwd = temporaryDirectory(t)
    const created = await runCli(['keys', 'create', '--name', 'alice'], {}, cwd)
    assert.equal(created.status, 0)
    const key = created.stdout.trim()
    assert.match(key, KEY)
    assert.equal(
      (await runCli(['keys', 'create', '--name', 'alice'], {}, cwd)).status,
      1,
      'names are unique among active keys',
    )

    // A name as long as a name may be (65 characters are refused: cli-usage.test.ts).
    const longest = `k${'e'.repeat(63)}`
    assert.equal((await runCli(['keys', 'create', '--name', longest], {}, cwd)).status, 0)
    const listed = await runCli(['keys', 'list'], {}, cwd)
    assert.match(listed.stdout, /alice\s+psk_\S{4}…/)
    assert.equal(listed.stdout.includes(key), false, 'the key itself is never shown again')
    const json = JSON.parse((await runCli(['keys', 'list', '--json'], {}, cwd)).stdout)
    assert.equal(json[0].name, 'alice')
    // An int64 id as text, exact: a script's JSON parser reads numbers as doubles.
    assert.equal(json[0].id, '1')
    assert.deepEqual(Object.keys(json[0]), ['id', 'name', 'hint', 'createdAt', 'deprecatedCalls'])

    const server = await startServeProcess({ API_KEY_CACHE_TTL_MS: '300' }, cwd)
    t.after(() => server.child.kill('SIGKILL'))
    assert.equal((await get(server.origin, '/v1/pets', key)).status, 200)
    assert.equal(
      (await get(server.origin, `/v1/pets?api_key=${key}`, key)).status,
      400,
      'a key in the URL is refused',
    )
    assert.equal((await runCli(['keys', 'revoke', 'alice'], {}, cwd)).status, 0)
    assert.equal((await runCli(['keys', 'revoke', 'alice'], {}, cwd)).status, 1)
    const afterRevoke = (await runCli(['keys', 'list'], {}, cwd)).stdout
    assert.match(
      afterRevoke,
      /^alice\s+psk_\S{4}…\s+\S+\s+\d{4}-\d\d-\d\dT\S+Z\s/m,
      'listed as revoked, and when',
    )
    const revokedAt = JSON.parse((await runCli(['keys', 'list', '--json'], {}, cwd)).stdout)[0].revokedAt
    assert.ok(afterRevoke.includes(revokedAt), afterRevoke)
    await sleep(400)
    assert.equal((await get(server.origin, '/v1/pets', key)).status, 401)
    assert.equal(server.output().includes(key), false, 'the key never reaches the log, not even from a URL')
    assert.match(server.output(), /api_key=psk_\[redacted\]/)
  })

  test('when a key calls the deprecated getPet, then keys list shows how often and when it last did, calls refused as malformed or by the rate limit included', async (t) => {
    const cwd = temporaryDirectory(t)
    const key = (await runCli(['keys', 'create', '--name', 'legacy'], {}, cwd)).stdout.trim()
    await runCli(['keys', 'create', '--name', 'modern'], {}, cwd)
    const server = await startServeProcess({ RATE_LIMIT_PER_MINUTE: '5' }, cwd)
    t.after(() => server.child.kill('SIGKILL'))
    const started = Date.now()
    for (let i = 0; i < 3; i++) assert.equal((await get(server.origin, '/v1/pets/1', key)).status, 404)
    assert.equal((await get(server.origin, '/v1/pets', key)).status, 200, 'listPets is not deprecated')
    assert.equal((await get(server.origin, '/v1/pets/abc', key)).status, 400)
    assert.equal((await get(server.origin, '/v1/pets/1', key)).status, 429)
    // Counts are written every few seconds and when the server stops.
    server.child.kill('SIGTERM')
    assert.equal(await exitWithin(server), 0)

    const [legacy, modern] = JSON.parse((await runCli(['keys', 'list', '--json'], {}, cwd)).stdout)
    assert.equal(legacy.deprecatedCalls, 5)
    const last = Date.parse(legacy.lastDeprecatedCallAt)
    assert.ok(last >= started - 1000 && last <= Date.now(), legacy.lastDeprecatedCallAt)
    assert.equal(modern.deprecatedCalls, 0)
    assert.equal(modern.lastDeprecatedCallAt, undefined)
    const table = (await runCli(['keys', 'list'], {}, cwd)).stdout
    assert.match(table, /^NAME\s+KEY\s+CREATED\s+REVOKED\s+DEPRECATED CALLS\s+LAST DEPRECATED CALL$/m)
    assert.match(table, /^legacy\s+psk_\S{4}…\s+\S+\s+active\s+5\s+\d{4}-\d\d-\d\dT[\d:.]+Z$/m)
    assert.match(table, /^modern\s+psk_\S{4}…\s+\S+\s+active\s+0\s+-$/m)
  })

  test('when the first start finds no key and no terminal, then it writes one to data/initial-api-key (0600), never to the log', async (t) => {
    const cwd = temporaryDirectory(t)
    const server = await startServeProcess({}, cwd)
    t.after(() => server.child.kill('SIGKILL'))
    const path = join(cwd, 'data', 'initial-api-key')
    const key = readFileSync(path, 'utf8').trim()
    assert.match(key, KEY)
    assert.equal(statSync(path).mode & 0o777, 0o600)
    assert.equal((await get(server.origin, '/v1/pets', key)).status, 200)
    assert.equal(server.output().includes(key), false)
    assert.match(server.output(), /initial-api-key/)

    server.child.kill('SIGTERM')
    assert.equal(await exitWithin(server), 0)
    const again = await startServeProcess({}, cwd)
    t.after(() => again.child.kill('SIGKILL'))
    assert.equal(readFileSync(path, 'utf8').trim(), key, 'a second start creates no other key')
  })
})
