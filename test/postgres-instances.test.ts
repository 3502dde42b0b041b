import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { temporaryDirectory } from './helpers/cleanup.ts'
import { runCli, startServeProcess } from './helpers/cli-process.ts'
import { sharedPostgres } from './helpers/postgres-server.ts'
import { engineSuiteOptions, postgresEngine } from './helpers/store-engines.ts'

const TTL_MS = 500

async function call(origin: string, key: string, method: string, path: string, body?: string) {
  const response = await fetch(`${origin}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body,
  })
  return { status: response.status, text: await response.text() }
}

describe('many instances on one PostgreSQL database', engineSuiteOptions(postgresEngine), () => {
  test('when two instances take concurrent creates, then ids are distinct and both instances see everything', async (t) => {
    const cwd = temporaryDirectory(t)
    const env = {
      DATABASE_URL: await (await sharedPostgres()).createDatabase(),
      API_KEY_CACHE_TTL_MS: String(TTL_MS),
    }
    const key = runCli(['keys', 'create', '--name', 'shared'], env, cwd).stdout.trim()
    const instances = await Promise.all([startServeProcess(env, cwd), startServeProcess(env, cwd)])
    for (const instance of instances) t.after(() => instance.child.kill('SIGKILL'))

    const created = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        call(
          instances[i % 2]?.origin ?? '',
          key,
          'POST',
          '/v1/pets',
          `{"name":"pet ${i}","categoryId":${9007199254740993n + BigInt(i)}}`,
        ),
      ),
    )
    assert.ok(created.every((response) => response.status === 201))
    const ids = created.map((response) => JSON.parse(response.text).id as number)
    assert.equal(new Set(ids).size, 200, 'every id is distinct')

    for (const instance of instances) {
      for (const response of created) {
        const id = /"id":(\d+)/.exec(response.text)?.[1]
        assert.equal((await call(instance.origin, key, 'GET', `/v1/pets/${id}`)).text, response.text)
      }
    }
    for (const query of ['?limit=100', '?limit=100&status=sold', '?limit=7']) {
      const [a, b] = await Promise.all(
        instances.map((instance) => call(instance.origin, key, 'GET', `/v1/pets${query}`)),
      )
      assert.equal(a?.text, b?.text, `both instances list the same pets for ${query}`)
    }
    const listed = JSON.parse((await call(instances[0]?.origin ?? '', key, 'GET', '/v1/pets?limit=100')).text)
    assert.deepEqual(
      listed.map((pet: { id: number }) => pet.id),
      [...ids].sort((x, y) => x - y).slice(0, 100),
    )
  })

  test('when a key is revoked through the CLI, then every instance refuses it within the cache TTL', async (t) => {
    const cwd = temporaryDirectory(t)
    const env = {
      DATABASE_URL: await (await sharedPostgres()).createDatabase(),
      API_KEY_CACHE_TTL_MS: String(TTL_MS),
    }
    const key = runCli(['keys', 'create', '--name', 'leaving'], env, cwd).stdout.trim()
    const instances = await Promise.all([startServeProcess(env, cwd), startServeProcess(env, cwd)])
    for (const instance of instances) t.after(() => instance.child.kill('SIGKILL'))
    for (const instance of instances)
      assert.equal((await call(instance.origin, key, 'GET', '/v1/pets')).status, 200)

    assert.equal(runCli(['keys', 'revoke', 'leaving'], env, cwd).status, 0)
    const revokedAt = Date.now()
    await sleep(TTL_MS + 100)
    for (const instance of instances) {
      assert.equal((await call(instance.origin, key, 'GET', '/v1/pets')).status, 401)
    }
    assert.ok(Date.now() - revokedAt < TTL_MS + 1000)
  })

  test('when both instances get the same Idempotency-Key at once, then exactly one pet is created', async (t) => {
    const cwd = temporaryDirectory(t)
    const env = { DATABASE_URL: await (await sharedPostgres()).createDatabase() }
    const key = runCli(['keys', 'create', '--name', 'retrying'], env, cwd).stdout.trim()
    const instances = await Promise.all([startServeProcess(env, cwd), startServeProcess(env, cwd)])
    for (const instance of instances) t.after(() => instance.child.kill('SIGKILL'))
    const responses = await Promise.all(
      Array.from({ length: 20 }, async (_, i) => {
        const response = await fetch(`${instances[i % 2]?.origin}/v1/pets`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${key}`,
            'content-type': 'application/json',
            'idempotency-key': 'once',
          },
          body: '{"name":"Once","categoryId":1}',
        })
        return { status: response.status, text: await response.text() }
      }),
    )
    const created = responses.filter((response) => response.status === 201)
    assert.ok(created.length >= 2, 'both instances answered 201 (one created, the other replayed)')
    assert.ok(responses.every((response) => response.status === 201 || response.status === 409))
    assert.equal(new Set(created.map((response) => response.text)).size, 1)
    const listed = JSON.parse((await call(instances[0]?.origin ?? '', key, 'GET', '/v1/pets')).text)
    assert.equal(listed.length, 1)
  })
})
