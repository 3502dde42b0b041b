import assert from 'node:assert/strict'
import { type AddressInfo, createServer } from 'node:net'
import { describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { generateApiKey } from '../src/auth/api-key.ts'
import { StoreUnavailableError } from '../src/errors.ts'
import { PostgresStore } from '../src/store/postgres/postgres-store.ts'
import { temporaryDirectory } from './helpers/cleanup.ts'
import { startServeProcess } from './helpers/cli-process.ts'
import { startPostgres } from './helpers/postgres-server.ts'
import { engineSuiteOptions, postgresEngine } from './helpers/store-engines.ts'

const CONNECT_TIMEOUT_MS = 1000

describe('PostgreSQL outages', engineSuiteOptions(postgresEngine), () => {
  test('when the database stops under load, then requests fail fast with 503, the service recovers by itself and no acknowledged create is lost', async (t) => {
    // A server of its own: this test stops it.
    const postgres = await startPostgres()
    if (!postgres.controllable) return t.skip('a server named by URL cannot be stopped by tests')
    t.after(() => postgres.stop('immediate'))
    const key = generateApiKey()
    const env = {
      DATABASE_URL: await postgres.createDatabase(),
      API_KEYS: `outage:${key}`,
      PG_CONNECT_TIMEOUT_MS: String(CONNECT_TIMEOUT_MS),
      PG_STATEMENT_TIMEOUT_MS: '2000',
    }
    const service = await startServeProcess(env, temporaryDirectory(t))
    t.after(() => service.child.kill('SIGKILL'))
    let exited = false
    service.exited.then(() => {
      exited = true
    })
    const call = async (method: string, path: string, body?: string) => {
      const started = performance.now()
      const response = await fetch(`${service.origin}${path}`, {
        method,
        headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        body,
        signal: AbortSignal.timeout(10_000),
      })
      return { status: response.status, text: await response.text(), ms: performance.now() - started }
    }

    // Writers run through the whole outage; every 201 they get must survive it.
    const acknowledged: string[] = []
    let writing = true
    let sequence = 0
    const writers = Array.from({ length: 4 }, async () => {
      while (writing) {
        const response = await call('POST', '/v1/pets', `{"name":"w${sequence++}","categoryId":1}`)
        if (response.status === 201) acknowledged.push(response.text)
        else assert.equal(response.status, 503, response.text)
      }
    })
    await sleep(300)
    postgres.stop('immediate')

    for (const [method, path, body] of [
      ['GET', '/v1/pets'],
      ['GET', '/v1/pets/1'],
      ['POST', '/v1/pets', '{"name":"x","categoryId":1}'],
    ] as const) {
      const response = await call(method, path, body)
      assert.equal(response.status, 503, `${method} ${path} during the outage: ${response.text}`)
      assert.deepEqual(Object.keys(JSON.parse(response.text)).sort(), ['code', 'message', 'status'])
      assert.equal(JSON.parse(response.text).code, 'service_unavailable')
      assert.ok(response.ms < CONNECT_TIMEOUT_MS + 1500, `answered in ${Math.round(response.ms)} ms`)
    }
    await sleep(500)
    assert.equal(exited, false, 'the service survives connections dropped by the database')

    postgres.start()
    let recovered = false
    for (let attempt = 0; attempt < 40 && !recovered; attempt++) {
      recovered = (await call('GET', '/v1/pets')).status === 200
      if (!recovered) await sleep(250)
    }
    assert.ok(recovered, 'the service recovers by itself once the database is back')
    writing = false
    await Promise.all(writers)

    assert.ok(acknowledged.length > 0)
    for (const text of acknowledged) {
      const { id } = JSON.parse(text)
      assert.equal(
        (await call('GET', `/v1/pets/${id}`)).text,
        text,
        'an acknowledged create survived the outage',
      )
    }
    t.diagnostic(`acknowledged ${acknowledged.length} creates across the outage`)
  })

  test('when the database host accepts connections but never answers, then calls fail within the connect timeout', async (t) => {
    const silent = createServer(() => {})
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
    t.after(() => silent.close())
    const { port } = silent.address() as AddressInfo
    const store = new PostgresStore({
      url: `postgres://nobody@127.0.0.1:${port}/none`,
      poolSize: 2,
      statementTimeoutMs: 1000,
      connectTimeoutMs: CONNECT_TIMEOUT_MS,
      onIdleError: () => {},
    })
    t.after(() => store.close())
    for (const attempt of [
      () => store.getPet(1n),
      () => store.createPet({ pet: { name: 'x', categoryId: 1n } }),
    ]) {
      const started = performance.now()
      await assert.rejects(attempt(), StoreUnavailableError)
      assert.ok(performance.now() - started < CONNECT_TIMEOUT_MS + 500)
    }
  })
})
